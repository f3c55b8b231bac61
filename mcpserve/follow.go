package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// multiRoundTrip is the first protocol version whose servers ask a client
// for input by returning input requests (SEP-2322) rather than sending it
// requests; the SDK does not export the name.
const multiRoundTrip = "2026-07-28"

// answerKey names the one input request of a result: the person's answer.
const answerKey = "answer"

// maxAsks bounds how often one call asks a person again after the process
// refused an answer.
const maxAsks = 3

// The _meta members of an elicitation: which process and chunk it asks for.
const (
	MetaProcess = "vibe/process"
	MetaChunk   = "vibe/chunk"
)

// follower follows one process for one tool call.
type follower struct {
	s     *Server
	req   *mcp.CallToolRequest
	id    string
	total int // chunks in all, for progress; 0 when unknown
	shown int // chunks reported done
	// refused is the problem with the person's last answer, told when they
	// are asked again.
	refused string
	asked   int
	// unheard is true when progress was sent that the client may not have
	// handled yet: flush makes sure it has, before the call's result.
	unheard bool
}

// flushTimeout bounds how long a call's result waits for the client to
// answer flush's ping; a client that does not answer gets its result
// anyway.
const flushTimeout = 10 * time.Second

// progress sends a progress notification, when the client asked for them.
func (f *follower) progress(ctx context.Context, done int, msg string) {
	tok := f.req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	p := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(done), Message: msg}
	if f.total > 0 {
		p.Total = float64(f.total)
	}
	if err := f.req.Session.NotifyProgress(ctx, p); err != nil {
		f.s.opts.Logger.Debug("mcp: progress not sent", "id", f.id, "err", err)
		return
	}
	f.unheard = true
}

// flush returns once the client has handled the progress sent so far. A
// client reads a call's result as soon as it arrives, while it may still
// be handling earlier notifications (the SDK's client runs their handlers
// on a queue of their own, and hands the result over at once): written in
// order is not handled in order. A ping, queued behind them, is answered
// only after them, so the result that follows its answer comes last.
func (f *follower) flush(ctx context.Context) {
	if !f.unheard || ctx.Err() != nil {
		return
	}
	f.unheard = false
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := f.req.Session.Ping(ctx, nil); err != nil {
		f.s.opts.Logger.Debug("mcp: the client did not answer the ping after progress", "id", f.id, "err", err)
	}
}

// follow reads the process until it completes, fails, or waits for a
// person who cannot be asked (or is being asked by the client), and
// returns the call's result once the client has handled the progress
// sent before it.
func (f *follower) follow(ctx context.Context) (*mcp.CallToolResult, error) {
	res, err := f.watch(ctx)
	f.flush(ctx)
	return res, err
}

// watch reads the process until it completes, fails, or waits for a
// person who cannot be asked (or is being asked by the client).
func (f *follower) watch(ctx context.Context) (*mcp.CallToolResult, error) {
	wctx, cancel := f.s.following(ctx, f.req.Session)
	defer cancel()
	var last *process.Info
watch:
	for {
		for info, err := range f.s.p.Watch(wctx, f.id, process.WatchOptions{Interval: f.s.opts.Poll}) {
			switch {
			case err != nil && ctx.Err() != nil:
				return f.interrupted(ctx)
			case err != nil && wctx.Err() != nil:
				if last == nil {
					// Stopped during the first read: say how the process is.
					if last, err = f.s.p.Get(ctx, f.id); err != nil {
						return failure(err), nil
					}
				}
				return stopped(last), nil
			case err != nil:
				return failure(err), nil
			}
			last = info
			for ; f.shown < len(info.Done); f.shown++ {
				f.progress(ctx, f.shown+1, "✓ "+info.Done[f.shown])
			}
			switch info.Status {
			case process.Completed, process.Failed:
				return outcome(info), nil
			case process.Waiting:
				if info.Waiting != nil {
					res, err := f.ask(ctx, info)
					if res != nil || err != nil {
						return res, err
					}
					// Answered, or to be asked again: read it again at once.
					continue watch
				}
			}
		}
	}
}

// following is ctx, also ended when the server stops following its calls
// (Close) or Run stops the call's session: the call then says the process
// goes on. A person being asked is not interrupted by it.
func (s *Server) following(ctx context.Context, ss *mcp.ServerSession) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := s.stopped(ss)
	go func() {
		defer cancel()
		select {
		case <-s.stopping:
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// interrupted ends a call whose context ended. When the client cancelled
// the call (notifications/cancelled: the SDK ends the context with the
// cause context.Canceled), the process is cancelled too; when the session
// ended, the process goes on.
func (f *follower) interrupted(ctx context.Context) (*mcp.CallToolResult, error) {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := f.s.p.Cancel(cctx, f.id); err != nil {
			f.s.opts.Logger.Error("mcp: the call was cancelled, but its process could not be", "id", f.id, "err", err)
		} else {
			f.s.opts.Logger.Info("mcp: the call was cancelled, and so is its process", "id", f.id)
		}
	} else {
		f.s.opts.Logger.Info("mcp: the session ended; the process goes on", "id", f.id, "cause", context.Cause(ctx))
	}
	return nil, ctx.Err()
}

// ask asks the person for the chunk the process waits on: through the
// client's form, or — when there is none — by returning "waiting". A nil
// result means the answer was taken and the process moves on.
func (f *follower) ask(ctx context.Context, info *process.Info) (*mcp.CallToolResult, error) {
	w := info.Waiting
	form, err := NewForm(w.Schema)
	switch {
	case err != nil:
		return waiting(info, "the chunk's schema is richer than an MCP form: "+err.Error()), nil
	case !elicits(f.req):
		return waiting(info, "the client does not take elicitations (form mode)"), nil
	case f.asked >= maxAsks:
		return waiting(info, "the person's answers were refused "+fmt.Sprint(f.asked)+" times: "+f.refused), nil
	}
	f.asked++
	params := &mcp.ElicitParams{
		Meta:            mcp.Meta{MetaProcess: f.id, MetaChunk: w.Chunk},
		Mode:            "form",
		Message:         message(info, f.refused),
		RequestedSchema: json.RawMessage(jsonv.Marshal(form.Schema)),
	}
	if multiRoundTripped(f.req) {
		// The client asks, and calls again with the answer and this state.
		st, _ := json.Marshal(requestState{ID: f.id, Chunk: w.Chunk, Asked: f.asked, Total: f.total})
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{answerKey: params}, RequestState: string(st)}, nil
	}
	res, err := f.req.Session.Elicit(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return f.interrupted(ctx)
		}
		if problems, ok := outsideForm(err); ok {
			f.refused = problems
			return nil, nil
		}
		return waiting(info, "asking the person failed: "+err.Error()), nil
	}
	return f.take(ctx, info, form, res)
}

// sdkMismatch is how the SDK's ServerSession.Elicit says the content it
// received does not fit the requested schema. It has no typed error for
// it, and the answer is lost with it, so its text is all there is to tell
// a person's mistake (asked again) from a failure to ask (not).
const sdkMismatch = "elicitation result content does not match requested schema: "

// outsideForm returns the problems of an answer outside the form, when
// err is the SDK's refusal of one.
func outsideForm(err error) (string, bool) {
	msg := err.Error()
	i := strings.Index(msg, sdkMismatch)
	if i < 0 {
		return "", false
	}
	return "it does not fit the form: " + msg[i+len(sdkMismatch):], true
}

// take gives the person's answer to the process. A nil result means it
// was taken, or refused and to be asked again.
func (f *follower) take(ctx context.Context, info *process.Info, form *Form, res *mcp.ElicitResult) (*mcp.CallToolResult, error) {
	if res.Action != "accept" {
		return waiting(info, "the person did not answer ("+res.Action+")"), nil
	}
	answer, err := form.Answer(res.Content)
	if err != nil {
		// A field the form does not have: the person's (or the client's)
		// mistake, asked again like an answer the process refuses.
		f.refused = "it does not fit the form: " + err.Error()
		return nil, nil
	}
	_, err = f.s.p.Answer(ctx, f.id, answer)
	var refused *process.RefusedError
	switch {
	case errors.As(err, &refused):
		f.refused = refused.Message
		return nil, nil
	case err != nil:
		return failure(err), nil
	}
	f.refused, f.asked = "", 0
	return nil, nil
}

// requestState is what a multi round-trip call carries from the round
// that asked to the round that answers. It names a process and a chunk,
// nothing more: an answer sent with a forged state is checked by that
// process like any other (answer_process takes the same).
type requestState struct {
	ID    string `json:"id"`
	Chunk string `json:"chunk"`
	Asked int    `json:"asked"`
	Total int    `json:"total,omitempty"`
}

// resume is the round of a multi round-trip call that brings the person's
// answer: it gives the answer to the process and follows it on.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var st requestState
	if err := json.Unmarshal([]byte(req.Params.RequestState), &st); err != nil || st.ID == "" {
		return toolError("the call's request state is not Vibe's: %q", req.Params.RequestState), nil
	}
	f := &follower{s: s, req: req, id: st.ID, asked: st.Asked, total: st.Total}
	info, err := s.p.Get(ctx, st.ID)
	if err != nil {
		return failure(err), nil
	}
	// The earlier rounds told the chunks done so far.
	f.shown = len(info.Done)
	res, _ := req.Params.InputResponses[answerKey].(*mcp.ElicitResult)
	if info.Waiting != nil && info.Waiting.Chunk == st.Chunk && res != nil {
		form, err := NewForm(info.Waiting.Schema)
		if err != nil {
			return waiting(info, err.Error()), nil
		}
		if out, err := f.take(ctx, info, form, res); out != nil || err != nil {
			return out, err
		}
	}
	// Answered (or answered elsewhere meanwhile): follow on.
	return f.follow(ctx)
}

// elicits reports whether the client takes form elicitations.
func elicits(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// Neither mode named means form, for clients older than the modes.
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// multiRoundTripped reports whether the client is asked by returning input
// requests rather than by a request of the server's.
func multiRoundTripped(req *mcp.CallToolRequest) bool {
	v := req.ProtocolVersion()
	return v == "" || v >= multiRoundTrip
}

// message is what the person reads above the form: the process, the
// chunk, and the context the chunk references summarised as text — one
// line per value, "step › field: value", at most maxContextLines of them —
// rather than the context's JSON, which the client shows as it is.
func message(info *process.Info, refused string) string {
	var b strings.Builder
	if refused != "" {
		fmt.Fprintf(&b, "Your answer was refused: %s\n\n", refused)
	}
	fmt.Fprintf(&b, "Process %s (%s) waits for your answer to %s.", info.ID, info.Process, info.Waiting.Chunk)
	s := info.Waiting.Schema
	if t := s.Lookup("title").Str(); t != "" {
		fmt.Fprintf(&b, "\n%s", t)
	}
	if d := s.Lookup("description").Str(); d != "" {
		fmt.Fprintf(&b, "\n%s", d)
	}
	for _, step := range schema.Properties(s).All() {
		for _, kw := range []string{"title", "description"} {
			if t := step.Lookup(kw).Str(); t != "" {
				fmt.Fprintf(&b, "\n%s", t)
			}
		}
	}
	if lines := summary(info.Waiting.Context); len(lines) > 0 {
		b.WriteString("\n\nWhat the process knows so far:")
		for _, l := range lines {
			b.WriteString("\n• " + l)
		}
	}
	return b.String()
}

// The bounds of a context's summary: a person reads a form's message,
// and the full context stays in show_process.
const (
	maxContextLines = 24
	maxValueRunes   = 200
)

// summary is a context as lines of text: each scalar (or list of
// scalars) under its path of names, the context's top name left out when
// there is one (it is the chunk's context, "llmContext2"); thinking
// fields and metrics, which the model filled for itself, are left out.
func summary(ctx jsonv.Value) []string {
	var lines []string
	var more int
	add := func(line string) {
		if len(lines) < maxContextLines {
			lines = append(lines, line)
		} else {
			more++
		}
	}
	var walk func(path []string, v jsonv.Value)
	walk = func(path []string, v jsonv.Value) {
		label := strings.Join(path, " › ")
		if label != "" {
			label += ": "
		}
		switch v.Kind() {
		case jsonv.KindObject:
			for name, m := range v.Members() {
				if schema.IsThinking(name) || schema.IsMetric(name) {
					continue
				}
				walk(append(path[:len(path):len(path)], name), m)
			}
		case jsonv.KindArray:
			if scalars(v) {
				var parts []string
				for _, e := range v.Array() {
					parts = append(parts, scalarText(e))
				}
				add(label + clip(strings.Join(parts, ", ")))
				return
			}
			for i, e := range v.Array() {
				walk(append(path[:len(path):len(path)], fmt.Sprint(i+1)), e)
			}
		default:
			add(label + clip(scalarText(v)))
		}
	}
	if ctx.Object() != nil && ctx.Len() == 1 {
		ctx = ctx.Object().Members()[0].Value
	}
	walk(nil, ctx)
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more (show_process has them all)", more))
	}
	return lines
}

func scalars(v jsonv.Value) bool {
	for _, e := range v.Array() {
		if k := e.Kind(); k == jsonv.KindObject || k == jsonv.KindArray {
			return false
		}
	}
	return true
}

func scalarText(v jsonv.Value) string {
	if v.Kind() == jsonv.KindString {
		return v.Str()
	}
	return string(jsonv.Marshal(v))
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxValueRunes {
		return string(r[:maxValueRunes]) + "…"
	}
	return s
}

// outcome is the result of a process that completed or failed — or, read
// by cancel_process, any process: its id, its status, and its output (the
// process's state: every step's result) or its error, with its
// fire-and-forget actions as they are then.
func outcome(info *process.Info) *mcp.CallToolResult {
	o := head(info)
	switch info.Status {
	case process.Failed:
		msg := "failed"
		if info.Error != nil {
			msg = *info.Error
		}
		o.Set("error", jsonv.StringValue(msg))
		return structured(o.Value(), true)
	case process.Waiting:
		return waiting(info, "")
	}
	o.Set("output", info.State)
	if info.Direct != nil {
		if d, err := asJSON(info.Direct); err == nil {
			o.Set("direct", d)
		}
	}
	if u, err := asJSON(info.Usage); err == nil {
		o.Set("usage", u)
	}
	if len(info.ActionRuns) > 0 {
		// The fire-and-forget actions as they are when the process ends;
		// show_process reads them later.
		if a, err := asJSON(info.ActionRuns); err == nil {
			o.Set("actionRuns", a)
		}
	}
	if info.Replayed {
		o.Set("replayed", jsonv.BoolValue(true))
	}
	return structured(o.Value(), false)
}

// waiting is the result of a process that waits for a person who was not
// asked: what it waits for, why no form asked, and how to answer.
func waiting(info *process.Info, why string) *mcp.CallToolResult {
	o := head(info)
	if w := info.Waiting; w != nil {
		o.Set("waiting", jsonv.ObjectValue(
			jsonv.Member{Name: "chunk", Value: jsonv.StringValue(w.Chunk)},
			jsonv.Member{Name: "schema", Value: w.Schema},
			jsonv.Member{Name: "context", Value: w.Context},
		))
	}
	msg := fmt.Sprintf("The process waits, durably, for a person's answer; give it with %s {\"id\": %q, \"answer\": …} (a value of the waiting schema).", ToolAnswer, info.ID)
	if why != "" {
		msg = "No form asked: " + why + ". " + msg
	}
	o.Set("message", jsonv.StringValue(msg))
	return structured(o.Value(), false)
}

// stopped is the result of a call the server stopped following.
func stopped(info *process.Info) *mcp.CallToolResult {
	o := head(info)
	o.Set("message", jsonv.StringValue("The server is stopping; the process goes on, durably: read it with "+ToolShow+"."))
	return structured(o.Value(), false)
}

func head(info *process.Info) *jsonv.Object {
	o := jsonv.NewObject(6)
	o.Set("id", jsonv.StringValue(info.ID))
	o.Set("process", jsonv.StringValue(info.Process))
	o.Set("status", jsonv.StringValue(string(info.Status)))
	return o
}
