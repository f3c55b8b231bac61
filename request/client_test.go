package request

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// await reads a request until it is no longer running.
func await(t *testing.T, c *Client, id string) *Info {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := c.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != process.Running {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s still runs: %+v", id, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClient runs requests through Client on the embedded engine: a
// running request shows its decision and the calls finished so far; a
// finished one its calls, its states in the context's order, its usage; a
// delegate's sub-request is shown as its call's run and read like any
// request, but is not listed; a request with problems starts nothing.
func TestClient(t *testing.T) {
	eng := embedded(t)
	ctx := context.Background()

	release := make(chan struct{})
	var acts action.Registry
	acts.Register(action.Action{Name: "fast", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.ObjectValue(jsonv.Member{Name: "got", Value: in.Lookup("n")}), nil
	}})
	acts.Register(action.Action{Name: "slow", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return jsonv.Value{}, ctx.Err()
		}
		return jsonv.ObjectValue(jsonv.Member{Name: "got", Value: in.Lookup("n")}), nil
	}})
	speakerReg, err := registry.Open("../examples/speaker/registry")
	if err != nil {
		t.Fatal(err)
	}
	model, err := replay.Open("../examples/speaker/answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	loader := &vessel.Loader{Registry: speakerReg}
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	acti := &durable.Activities{Provider: model, Actions: &acts, Logger: quiet()}
	register(t, eng.Client(), w, acti, &Activities{Loader: loader})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c := &Client{Temporal: eng.Client(), Registry: speakerReg, Actions: acts.Names(), Loader: loader}

	params := mustJSON(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	ts := &vessel.Toolset{Vessel: "Pair", Tools: []*vessel.Tool{
		{Name: "fast", Kind: vessel.Action, Action: "fast", Schema: params},
		{Name: "slow", Kind: vessel.Action, Action: "slow", Schema: params},
	}}
	var pairID string
	t.Run("a running request shows what has finished", func(t *testing.T) {
		started, err := c.Start(ctx, StartOptions{Toolset: ts,
			Context:  mustJSON(t, `[{"type":"state","_instance":"b","v":1},{"type":"state","_instance":"a","v":2}]`),
			Decision: mustJSON(t, `{"calls":[{"_tool":"fast","_instance":"b","n":3,"_outputPath":"state.fast"},{"_tool":"slow","_instance":"a","n":4,"_outputPath":"state.slow"}]}`)})
		if err != nil {
			t.Fatal(err)
		}
		pairID = started.ID
		if !strings.HasPrefix(started.ID, "vessel-pair-") || started.Vessel != "Pair" {
			t.Errorf("started %+v", started)
		}
		var info *Info
		deadline := time.Now().Add(time.Minute)
		for info == nil || len(info.Calls) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the fast call never showed: %+v", info)
			}
			time.Sleep(20 * time.Millisecond)
			if info, err = c.Get(ctx, started.ID); err != nil {
				t.Fatal(err)
			}
		}
		if info.Status != process.Running || len(info.Calls) != 1 || info.Calls[0].Tool != "fast" || info.Calls[0].Result.Lookup("got").Literal() != "3" {
			t.Fatalf("while slow runs: %s %s", info.Status, mustMarshal(t, info.Calls))
		}
		if got := info.Decision.Lookup("calls").Len(); got != 2 || info.Vessel != "Pair" {
			t.Errorf("decision %s, vessel %q", jsonv.Marshal(info.Decision), info.Vessel)
		}
		close(release)
		info = await(t, c, started.ID)
		if info.Status != process.Completed || info.Error != nil || len(info.Calls) != 2 {
			t.Fatalf("after: %+v", info)
		}
		if got := string(jsonv.Marshal(info.States)); got != `{"b":{"v":1,"fast":{"got":3}},"a":{"v":2,"slow":{"got":4}}}` {
			t.Errorf("states %s: the context's order, each with its result", got)
		}
	})

	var speakerID string
	t.Run("a delegate's run is read like a request", func(t *testing.T) {
		doc, err := schema.ReadFile("../examples/speaker/orchestrator.vessel.json")
		if err != nil {
			t.Fatal(err)
		}
		started, err := c.Start(ctx, StartOptions{Document: doc, File: "../examples/speaker/orchestrator.vessel.json", Prompt: "Tell user u_123: Hello, world!", ContextFile: "request"})
		if err != nil {
			t.Fatal(err)
		}
		speakerID = started.ID
		info := await(t, c, started.ID)
		if info.Status != process.Completed || len(info.Calls) != 2 || info.Usage.PromptTokens == 0 || !info.Replayed {
			t.Fatalf("%+v", info)
		}
		for _, call := range info.Calls {
			if call.Error != "" || !strings.HasPrefix(call.Run, started.ID+"-") {
				t.Fatalf("call %s: error %q, run %q", call.Tool, call.Error, call.Run)
			}
			sub, err := c.Get(ctx, call.Run)
			if err != nil || sub.Status != process.Completed || !jsonv.Equal(sub.Output, call.Result) {
				t.Errorf("run %s: %+v %v", call.Run, sub, err)
			}
		}
	})

	t.Run("listed newest first, paged, without delegates' runs", func(t *testing.T) {
		var ids []string
		cursor := ""
		for pages := 0; pages < 5; pages++ {
			page, err := c.List(ctx, ListOptions{Limit: 1, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Requests) > 1 {
				t.Fatalf("a page of %d", len(page.Requests))
			}
			for _, s := range page.Requests {
				ids = append(ids, s.ID)
				if s.Status != process.Completed || s.Vessel == "" {
					t.Errorf("summary %+v", s)
				}
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(ids, []string{speakerID, pairID}) {
			t.Errorf("listed %v, want %v", ids, []string{speakerID, pairID})
		}
		if _, err := c.List(ctx, ListOptions{Cursor: "zzz"}); !errors.Is(err, durable.ErrBadCursor) {
			t.Errorf("a bad cursor: %v", err)
		}
	})

	t.Run("problems start nothing", func(t *testing.T) {
		page, _ := c.List(ctx, ListOptions{})
		before := len(page.Requests)
		tests := []struct {
			name string
			opts StartOptions
			want []string // the errors, each "FILE: /path: message"
		}{
			{"a bad inline Vessel", StartOptions{Document: mustJSON(t, `{"name":"X","colour":1,"tools":["aug:instructions/nope"]}`), File: "x.vessel.json"},
				[]string{`x.vessel.json: /colour: unknown key "colour" (want name, system, tools, processes, mixins, followUps, decisionSize)`}},
			{"a tool the registry lacks", StartOptions{Document: mustJSON(t, `{"name":"X","tools":["aug:instructions/nope"]}`)},
				[]string{`vessel: /tools/0: unknown $ref "aug:instructions/nope"`}},
			{"bad messages, where the context sits in its file", StartOptions{Toolset: ts, Context: mustJSON(t, `[{"type":"memo"},{"type":"system"}]`), ContextFile: "plan.json", ContextAt: "/context"},
				[]string{`plan.json: /context/0/type: unknown message type "memo"`, `plan.json: /context/1: a system message needs a "message" string`}},
			{"a plan that is not there", StartOptions{Toolset: ts, Plan: true},
				[]string{`context: /: the context holds no plan message`}},
			{"a plan with a bad call", StartOptions{Toolset: ts, Plan: true, Context: mustJSON(t, `[{"type":"plan","calls":[{"_tool":"fast"},{"_tool":"nope"}]}]`)},
				[]string{`context: /0/calls/0: call 1 (fast): parameters break the tool's schema: missing property 'n'`, `context: /0/calls/1/_tool: call 2 (nope): unknown tool "nope"`}},
			{"a decision with a bad call", StartOptions{Toolset: ts, Decision: mustJSON(t, `{"calls":[{"_tool":"fast"}]}`)},
				[]string{`decision: /calls/0: call 1 (fast): parameters break the tool's schema: missing property 'n'`}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := c.Start(ctx, tt.opts)
				var got []string
				for _, e := range schema.Errors(err, "") {
					got = append(got, e.Error())
				}
				if len(got) != len(tt.want) {
					t.Fatalf("errors %q, want %q", got, tt.want)
				}
				for i := range got {
					if !strings.HasPrefix(got[i], tt.want[i]) {
						t.Errorf("error %d: %q, want %q…", i, got[i], tt.want[i])
					}
				}
			})
		}
		var bound *BoundError
		if _, err := c.Start(ctx, StartOptions{Toolset: ts, MaxDepth: 5}); !errors.As(err, &bound) || bound.What != BoundDepth || bound.Bound != vessel.DefaultMaxDepth {
			t.Errorf("past the depth bound: %v", err)
		}
		if _, err := c.Start(ctx, StartOptions{Vessel: "aug:vessels/nope"}); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("an unknown Vessel URI: %v", err)
		}
		if _, err := (&Client{Temporal: eng.Client()}).Start(ctx, StartOptions{Vessel: "aug:vessels/x"}); !errors.Is(err, registry.ErrNoRegistry) {
			t.Errorf("no registry: %v", err)
		}
		if page, _ := c.List(ctx, ListOptions{}); len(page.Requests) != before {
			t.Errorf("%d requests listed, %d before: a refused request started", len(page.Requests), before)
		}
		if _, err := c.Get(ctx, "vessel-nope-00000000"); !errors.Is(err, ErrNotFound) {
			t.Errorf("an unknown id: %v", err)
		}
		// A request is no process, though both answer the query "view".
		if _, err := (&process.Client{Temporal: eng.Client()}).Get(ctx, pairID); !errors.Is(err, process.ErrNotFound) {
			t.Errorf("a request read as a process: %v", err)
		}
	})
}

// TestStartRefusesRegistryVessels: a Vessel from the registry with problems
// is refused with each of them in its file, before the engine is asked.
func TestStartRefusesRegistryVessels(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "vessels"), 0o755)
	os.WriteFile(filepath.Join(dir, "vessels", "bad.json"), []byte(`{"name": 5, "tools": ["nope"]}`), 0o644)
	reg, err := registry.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Client{Registry: reg}).Start(context.Background(), StartOptions{Vessel: "aug:vessels/bad"})
	var got []string
	for _, e := range schema.Errors(err, "") {
		got = append(got, e.Error())
	}
	want := []string{
		filepath.Join(dir, "vessels", "bad.json") + ": /name: name must be a string",
		filepath.Join(dir, "vessels", "bad.json") + `: /tools/0: "nope" is not a registry URI (aug:…)`,
		filepath.Join(dir, "vessels", "bad.json") + ": /: a Vessel needs a name",
		filepath.Join(dir, "vessels", "bad.json") + ": /: a Vessel needs tools or processes: it has nothing to call",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
