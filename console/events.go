package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
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
// at PATH?QUERY): every Poll it reads the page again and, when its live
// part has changed, sends that part as an event "page" whose data is the
// HTML to put in place. The stream lifts the server's write deadline and
// ends after streamFor, when the browser leaves, or when Options.Stop is
// closed; the browser's EventSource then connects again.
func (c *console) events(w http.ResponseWriter, r *http.Request) {
	target := &url.URL{Path: "/" + r.PathValue("path"), RawQuery: r.URL.RawQuery}
	if strings.HasPrefix(target.Path, "/events/") {
		c.fail(w, r, &pageError{status: http.StatusNotFound, msg: "no event stream of an event stream"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), streamFor)
	defer cancel()
	go func() {
		select {
		case <-c.opts.Stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	streaming := false
	// Once the stream has begun, a page that cannot be drawn is sent as
	// its problem, and the stream goes on.
	read := func(ctx context.Context) ([]byte, error) {
		frag, err := c.fragment(ctx, target)
		if err != nil && streaming && ctx.Err() == nil {
			return []byte(`<p class="problem">` + template.HTMLEscapeString(err.Error()) + `</p>`), nil
		}
		return frag, err
	}
	rc := http.NewResponseController(w)
	for frag, err := range watch.Changes(ctx, read, watch.Options[[]byte]{Interval: c.opts.Poll, Equal: bytes.Equal}) {
		if err != nil {
			if !streaming && ctx.Err() == nil {
				c.fail(w, r, err)
			}
			return
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
