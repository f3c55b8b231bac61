package request

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// Activities are the Vessel runtime's own activities: the decision and the
// delegate. Model calls and actions are durable.Activities'.
type Activities struct {
	// Model holds the model provider and its options (and the actions):
	// the shared activities, through whose model call Decide asks.
	Model *durable.Activities
	// Loader loads delegates: the registry, files, allowed URLs.
	Loader *vessel.Loader
	// Actions are the registered actions' names, for a delegate's own
	// toolset.
	Actions []string
}

// DecideInput is what a decision needs: the toolset it chooses from, the
// rules it must keep to, each instance's state (for the calls that read
// it), and the text the model is sent.
type DecideInput struct {
	Process string                 `json:"process"` // the workflow id, for logs and metrics
	Toolset *vessel.Toolset        `json:"toolset"`
	Rules   vessel.DecisionRules   `json:"rules"`
	States  map[string]jsonv.Value `json:"states"`
	System  string                 `json:"system"`
	Prompt  string                 `json:"prompt"`
	// Again, when set, asks for one call of a decision again: the next
	// attempt of its tool's loop (Tool.Loop).
	Again *Again `json:"again,omitempty"`
}

// Again is a loop's next attempt at one call of a decision: the model is
// shown the call as it stands (the previous attempt) and answers the call
// alone, on its tool's call schema; the decision with the new call in its
// place is checked as a whole.
type Again struct {
	Decision jsonv.Value `json:"decision"`
	Call     int         `json:"call"` // its index in the decision's calls
	// Attempt (from 2) and Max say where the loop is.
	Attempt int `json:"attempt"`
	Max     int `json:"max"`
}

// DecideOutput is a checked decision: as the model wrote it, and its calls
// wired into a graph.
type DecideOutput struct {
	Decision jsonv.Value   `json:"decision"`
	Calls    *vessel.Graph `json:"calls"`
	Usage    llm.Usage     `json:"usage"`
	Replayed bool          `json:"replayed,omitempty"`
}

// Decide asks the model for a decision on the toolset's decision schema
// under the rules, and checks it (vessel.CheckDecision): every call names
// a tool and an instance the decision is for, fits its tool, writes and
// reads only state paths the state's schema allows, reads only what the
// state has or an earlier call writes; the calls form no cycle and keep
// the fan-out bound. What the schema could not say goes back to the model
// as a repair turn, each problem by its JSON path, within the call path's
// bound; a decision that still breaks them fails with every problem.
func (a *Activities) Decide(ctx context.Context, in DecideInput) (DecideOutput, error) {
	if in.Again != nil {
		return a.decideAgain(ctx, in)
	}
	check := func(v jsonv.Value) []schema.Invalid {
		_, err := vessel.CheckDecision("decision", v, in.Toolset, in.States, in.Rules)
		return vessel.Problems(err)
	}
	out, err := a.Model.FillChecked(ctx, durable.FillInput{Process: in.Process, Chunk: "decision", System: in.System, Prompt: in.Prompt,
		Context: jsonv.NewObject(0).Value(), Schema: in.Toolset.DecisionSchema(in.Rules)}, check)
	if err != nil {
		return DecideOutput{}, err
	}
	g, err := vessel.CheckDecision("decision", out.Value, in.Toolset, in.States, in.Rules)
	if err != nil {
		return DecideOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadDecision, err)
	}
	return DecideOutput{Decision: out.Value, Calls: g, Usage: out.Usage, Replayed: out.Replayed}, nil
}

// LoopCallName is the schema name of a loop's next attempt at a call.
const LoopCallName = "call"

// decideAgain asks for the next attempt of a looping call (in.Again) and
// checks the decision with it in the previous one's place; what breaks it
// goes back to the model as a repair turn, as for a decision.
func (a *Activities) decideAgain(ctx context.Context, in DecideInput) (DecideOutput, error) {
	ag := in.Again
	calls := ag.Decision.Lookup("calls").Array()
	if ag.Call < 0 || ag.Call >= len(calls) {
		return DecideOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the decision has no call %d to ask again", ag.Call), ErrTypeBadDecision, nil)
	}
	prev := calls[ag.Call]
	t := in.Toolset.Tool(prev.Lookup("_tool").Str())
	if t == nil {
		return DecideOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("call %d names no tool of the toolset", ag.Call+1), ErrTypeBadDecision, nil)
	}
	rules := in.Rules
	if inst := prev.Lookup("_instance").Str(); inst != "" {
		rules.Instances, rules.Global = []string{inst}, false
	} else {
		rules.Instances, rules.Global = nil, true
	}
	with := func(call jsonv.Value) jsonv.Value {
		d := ag.Decision.Clone().Object()
		cs := slices.Clone(calls)
		cs[ag.Call] = call
		d.Set("calls", jsonv.ArrayValue(cs...))
		return d.Value()
	}
	at := jsonv.PointerTo("calls").AppendIndex(ag.Call)
	check := func(v jsonv.Value) []schema.Invalid {
		_, err := vessel.CheckDecision("decision", with(v), in.Toolset, in.States, in.Rules)
		problems := vessel.Problems(err)
		for i, p := range problems {
			// The model answers the call alone: its problems at their place in it.
			if rest, ok := strings.CutPrefix(string(p.Path), string(at)); ok && (rest == "" || rest[0] == '/') {
				problems[i].Path = jsonv.Pointer(rest)
			}
		}
		return problems
	}
	out, err := a.Model.FillChecked(ctx, durable.FillInput{Process: in.Process, Chunk: LoopCallName, System: in.System, Prompt: in.Prompt,
		Context: jsonv.NewObject(0).Value(), Schema: vessel.CallSchema(t, rules), Previous: prev, Attempt: ag.Attempt, MaxAttempts: ag.Max, Instance: prev.Lookup("_instance").Str()}, check)
	if err != nil {
		return DecideOutput{}, err
	}
	decision := with(out.Value)
	g, err := vessel.CheckDecision("decision", decision, in.Toolset, in.States, in.Rules)
	if err != nil {
		return DecideOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadDecision, err)
	}
	return DecideOutput{Decision: decision, Calls: g, Usage: out.Usage, Replayed: out.Replayed}, nil
}

// DelegateInput is the generic delegate activity's three arguments (SPEC
// §8): the call, the tool, and the scoped parent context.
type DelegateInput struct {
	Call    *vessel.Call  `json:"call"`
	Params  jsonv.Value   `json:"params"` // the call's parameters, references resolved
	Tool    *vessel.Tool  `json:"tool"`
	Context []jsonv.Value `json:"context"` // the scoped parent messages
}

// DelegateOutput is a delegate call's isolated sub-request.
type DelegateOutput struct {
	ID      string          `json:"id"` // where the delegate was loaded from
	Name    string          `json:"name"`
	Request *vessel.Request `json:"request"`
}

// Delegate is the generic delegate activity: it loads the delegate the
// tool names and prepares the call's isolated sub-request
// (vessel.Delegate.Prepare). A delegate that cannot be loaded, or that the
// allow-list refuses, fails the call at once; a network failure is
// retried.
func (a *Activities) Delegate(ctx context.Context, in DelegateInput) (DelegateOutput, error) {
	defer durable.KeepAlive(ctx)()
	loader := a.Loader
	if loader == nil {
		loader = &vessel.Loader{}
	}
	d, err := loader.Load(ctx, in.Tool.Delegate)
	if errors.Is(err, vessel.ErrTransient) {
		return DelegateOutput{}, err // Temporal retries it
	}
	if err != nil {
		return DelegateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadDelegate, err)
	}
	sub, err := d.Prepare(ctx, in.Tool, in.Context, in.Params, vessel.BuildOptions{Registry: loader.Registry, Loader: loader, Actions: a.Actions})
	if err != nil {
		return DelegateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadDelegate, err)
	}
	return DelegateOutput{ID: d.ID, Name: d.Name, Request: sub}, nil
}
