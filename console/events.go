package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/augceo/vibe/internal/watch"
)

// liveKey marks a request made by an event stream: the page's handler
// hands its data over (liveFragment) instead of writing the page.
type liveKey struct{}

type liveFragment struct {
	name string
	data any
	err  error
}

// events is a page's event stream (GET /events/PATH?QUERY follows the page
// at PATH?QUERY): it sends the page's live part as an event "page", whose
// data is the HTML to put in place, first as it is now and then each time
// it changes. Every stream of the same page shares one reader of it (a
// feed), which reads the page every Poll while anyone follows it: a
// hundred tabs on the list page cost the engine what one does. The stream
// lifts the server's write deadline and ends after streamFor, when the
// browser leaves, or when Options.Stop is closed; the browser's
// EventSource then connects again.
func (c *console) events(w http.ResponseWriter, r *http.Request) {
	target := &url.URL{Path: "/" + r.PathValue("path"), RawQuery: r.URL.RawQuery}
	if strings.HasPrefix(target.Path, "/events/") {
		c.fail(w, r, &pageError{status: http.StatusNotFound, msg: "no event stream of an event stream"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), streamFor)
	defer cancel()
	updates, leave := c.feeds.follow(c, target)
	defer leave()
	streaming := false
	rc := http.NewResponseController(w)
	for {
		var v feedValue
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Stop:
			return
		case v = <-updates:
		}
		frag := v.frag
		if v.err != nil {
			if !streaming {
				c.fail(w, r, v.err)
				return
			}
			// Once the stream has begun, a page that cannot be drawn is
			// sent as its problem, and the stream goes on.
			frag = []byte(`<p class="problem">` + template.HTMLEscapeString(v.err.Error()) + `</p>`)
		}
		if !streaming {
			streaming = true
			rc.SetWriteDeadline(time.Time{})
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-store")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
			// The first event is the page as it is now, which may have
			// changed since the browser drew it; a reconnect is asked for
			// after a second.
			fmt.Fprint(w, "retry: 1000\n\n")
		}
		if writeEvent(w, "page", frag) != nil || rc.Flush() != nil {
			return
		}
	}
}

// feeds are the pages followed by event streams, by URL: one reader of
// each, shared by its streams.
type feeds struct {
	mu sync.Mutex
	m  map[string]*feed
}

// feed reads one page every Poll while it has followers, and hands each
// new version to each of them.
type feed struct {
	subs map[chan feedValue]struct{}
	last *feedValue // the version drawn last; nil before the first
	stop context.CancelFunc
}

// feedValue is a version of a page's live part, or why it cannot be drawn.
type feedValue struct {
	frag []byte
	err  error
}

func (v feedValue) equal(o feedValue) bool {
	if (v.err == nil) != (o.err == nil) || (v.err != nil && v.err.Error() != o.err.Error()) {
		return false
	}
	return bytes.Equal(v.frag, o.frag)
}

// follow subscribes to the page at target: updates has the page's current
// version (at once when the feed has one) and then each new one; a
// follower that lags gets only the latest. leave ends the subscription,
// and the feed with its last follower.
func (f *feeds) follow(c *console, target *url.URL) (updates <-chan feedValue, leave func()) {
	key := target.String()
	ch := make(chan feedValue, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*feed{}
	}
	fd := f.m[key]
	if fd == nil {
		ctx, stop := context.WithCancel(context.Background())
		fd = &feed{subs: map[chan feedValue]struct{}{}, stop: stop}
		f.m[key] = fd
		go f.run(ctx, c, key, target, fd)
	}
	fd.subs[ch] = struct{}{}
	if fd.last != nil {
		ch <- *fd.last
	}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(fd.subs, ch)
		if len(fd.subs) == 0 && f.m[key] == fd {
			fd.stop()
			delete(f.m, key)
		}
	}
}

// run reads the page until the feed is stopped or the console is, and
// hands every new version to the followers.
func (f *feeds) run(ctx context.Context, c *console, key string, target *url.URL, fd *feed) {
	go func() {
		select {
		case <-c.opts.Stop:
			fd.stop()
		case <-ctx.Done():
		}
	}()
	read := func(ctx context.Context) (feedValue, error) {
		frag, err := c.fragment(ctx, target)
		return feedValue{frag: frag, err: err}, nil
	}
	for v := range watch.Changes(ctx, read, watch.Options[feedValue]{Interval: c.opts.Poll, Equal: feedValue.equal}) {
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		fd.last = &v
		for ch := range fd.subs {
			select { // the latest version replaces one not yet taken
			case <-ch:
			default:
			}
			ch <- v
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	if f.m[key] == fd {
		delete(f.m, key)
	}
	f.mu.Unlock()
}

// fragment draws the live part of the page at target.
func (c *console) fragment(ctx context.Context, target *url.URL) ([]byte, error) {
	live := &liveFragment{}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, liveKey{}, live), http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, &pageError{status: http.StatusBadRequest, msg: err.Error()}
	}
	c.mux.ServeHTTP(discard{}, req)
	switch {
	case live.err != nil:
		return nil, live.err
	case live.name == "" || c.pages.Lookup(live.name) == nil:
		return nil, &pageError{status: http.StatusNotFound, msg: "no live page at " + target.Path}
	}
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, live.name, live.data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeEvent writes one server-sent event; each line of data is a data
// field of its own, as the format wants.
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// discard is the writer the page handlers get when an event stream calls
// them: they hand their data over instead of writing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
