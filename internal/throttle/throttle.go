package throttle

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The defaults of a Limiter's zero fields.
const (
	// DefaultBurst is how many wrong guesses a client has at first.
	DefaultBurst = 5
	// DefaultEvery is how long a client waits for one more.
	DefaultEvery = 2 * time.Second
	// DefaultMax bounds how many clients a Limiter remembers.
	DefaultMax = 10000
)

// Limiter is a token bucket per client, spent by wrong guesses only: a
// client has Burst of them, and gets one back every Every. Its zero value
// uses the defaults above; it is safe for concurrent use.
type Limiter struct {
	// Burst is how many wrong guesses a client may make in a row; 0
	// means DefaultBurst.
	Burst int
	// Every is how long it takes a client to get one guess back; 0
	// means DefaultEvery.
	Every time.Duration
	// Max bounds the clients remembered; 0 means DefaultMax. A client
	// whose bucket has filled again is forgotten first (it is as good as
	// new), then the one that guessed longest ago.
	Max int

	mu      sync.Mutex
	clients map[string]*bucket
}

// bucket is a client's guesses left at a time.
type bucket struct {
	left float64
	at   time.Time
}

func (l *Limiter) burst() float64 {
	if l.Burst <= 0 {
		return DefaultBurst
	}
	return float64(l.Burst)
}

func (l *Limiter) every() time.Duration {
	if l.Every <= 0 {
		return DefaultEvery
	}
	return l.Every
}

func (l *Limiter) max() int {
	if l.Max <= 0 {
		return DefaultMax
	}
	return l.Max
}

// leftAt is how many guesses b has at now.
func (l *Limiter) leftAt(b *bucket, now time.Time) float64 {
	left := b.left + float64(now.Sub(b.at))/float64(l.every())
	return min(left, l.burst())
}

// Guess lets client make a guess at now if it has one left: check makes
// it (under the limiter's lock, so concurrent guesses cannot overspend),
// and right is its answer; a wrong guess spends one. With none left check
// is not called, right is false, and wait (> 0) is how long until the
// client has one again. A right guess costs nothing, and a client that
// never guessed wrong takes no memory.
func (l *Limiter) Guess(client string, now time.Time, check func() bool) (right bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[client]
	if b != nil {
		b.left, b.at = l.leftAt(b, now), now
		if b.left < 1 {
			return false, time.Duration((1 - b.left) * float64(l.every()))
		}
	}
	if check() {
		return true, 0
	}
	if b == nil {
		l.makeRoom(now)
		b = &bucket{left: l.burst(), at: now}
		if l.clients == nil {
			l.clients = map[string]*bucket{}
		}
		l.clients[client] = b
	}
	b.left--
	return false, 0
}

// makeRoom forgets clients until there is room for one more: first those
// whose buckets are full again, then the one that guessed longest ago.
func (l *Limiter) makeRoom(now time.Time) {
	if len(l.clients) < l.max() {
		return
	}
	for k, b := range l.clients {
		if l.leftAt(b, now) >= l.burst() {
			delete(l.clients, k)
		}
	}
	for len(l.clients) >= l.max() {
		var oldest string
		var at time.Time
		for k, b := range l.clients {
			if oldest == "" || b.at.Before(at) {
				oldest, at = k, b.at
			}
		}
		delete(l.clients, oldest)
	}
}

// Len is how many clients the limiter remembers.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// Client names the client that sent r for a Limiter: the address of the
// connection's other end (behind a reverse proxy, the proxy: a header
// such as X-Forwarded-For is the client's to write, so it is not
// believed). An IPv6 address counts by its /64, the block one host is
// usually given.
func Client(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// RetryAfter is wait as a Retry-After header's value: whole seconds,
// rounded up, at least 1.
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second)))
}
