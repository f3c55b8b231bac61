package throttle

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func wrong() bool { return false }
func right() bool { return true }

// TestGuess: five wrong guesses, then none until one comes back two
// seconds later, the check not even run; a right guess costs nothing, and
// another client is not held back.
func TestGuess(t *testing.T) {
	var l Limiter
	for i := range 5 {
		if ok, wait := l.Guess("a", t0, wrong); ok || wait != 0 {
			t.Fatalf("guess %d: %v %s", i+1, ok, wait)
		}
	}
	ran := false
	ok, wait := l.Guess("a", t0.Add(500*time.Millisecond), func() bool { ran = true; return true })
	if ok || ran || wait != 1500*time.Millisecond || RetryAfter(wait) != "2" {
		t.Fatalf("the sixth: %v ran %v wait %s", ok, ran, wait)
	}
	if ok, wait := l.Guess("b", t0, right); !ok || wait != 0 {
		t.Errorf("another client: %v %s", ok, wait)
	}
	if ok, wait := l.Guess("a", t0.Add(2*time.Second), right); !ok || wait != 0 {
		t.Errorf("two seconds on: %v %s", ok, wait)
	}
	// The right guess spent nothing: the one try is still there.
	if ok, wait := l.Guess("a", t0.Add(2*time.Second), wrong); ok || wait != 0 {
		t.Errorf("after the right guess: %v %s", ok, wait)
	}
	if _, wait := l.Guess("a", t0.Add(2*time.Second), wrong); wait != 2*time.Second {
		t.Errorf("spent again: %s", wait)
	}
	if l.Len() != 1 {
		t.Errorf("%d clients remembered, want 1 (b never guessed wrong)", l.Len())
	}
}

// TestConcurrent: 100 wrong guesses at once spend exactly the burst.
func TestConcurrent(t *testing.T) {
	var l Limiter
	var mu sync.Mutex
	checked := 0
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			l.Guess("a", t0, func() bool { mu.Lock(); checked++; mu.Unlock(); return false })
		})
	}
	wg.Wait()
	if checked != DefaultBurst {
		t.Errorf("%d guesses checked, want %d", checked, DefaultBurst)
	}
}

// TestBounded: the table never holds more than Max clients; a full
// bucket goes first, then the one that guessed longest ago.
func TestBounded(t *testing.T) {
	l := Limiter{Max: 3}
	l.Guess("old", t0, wrong)
	for range 3 {
		l.Guess("mid", t0.Add(time.Second), wrong)
		l.Guess("new", t0.Add(2*time.Second), wrong)
	}
	l.Guess("x", t0.Add(3*time.Second), wrong) // "old" has its one back, and is forgotten
	if _, ok := l.clients["old"]; ok || l.Len() != 3 {
		t.Errorf("after x: %v", l.clients)
	}
	// "y", spent and guessing still, outlives the clients that come
	// after it but guess no more.
	for range 5 {
		l.Guess("y", t0.Add(4*time.Second), wrong)
	}
	for i := range 5 {
		at := t0.Add(4*time.Second + time.Duration(i)*10*time.Millisecond)
		l.Guess("y", at, wrong)
		l.Guess(fmt.Sprint("z", i), at.Add(time.Millisecond), wrong)
		if l.Len() > 3 {
			t.Fatalf("%d clients", l.Len())
		}
	}
	if _, wait := l.Guess("y", t0.Add(5*time.Second), wrong); wait == 0 {
		t.Errorf("y is forgotten: %v", l.clients)
	}
}

func TestClient(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:5555":                "192.0.2.7",
		"[::ffff:192.0.2.7]:5555":       "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":         "2001:db8:1:3::/64",
		"pipe":                          "pipe",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		if got := Client(r); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}
