package vessel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

const delegateName = "vibe.Delegate"

// Activities holds the delegate activity.
type Activities struct {
	// Loader loads delegates: the registry, files, allowed URLs.
	Loader *Loader
	// Actions are the registered actions' names, for a delegate's own
	// toolset.
	Actions []string
}

// DelegateInput is the generic delegate activity's three arguments (SPEC
// §8): the call, the tool, and the scoped parent context.
type DelegateInput struct {
	Call    *Call         `json:"call"`
	Params  jsonv.Value   `json:"params"` // the call's parameters, references resolved
	Tool    *Tool         `json:"tool"`
	Context []jsonv.Value `json:"context"` // the scoped parent messages
}

// DelegateOutput is a delegate call's isolated sub-request.
type DelegateOutput struct {
	ID      string `json:"id"` // where the delegate was loaded from
	Name    string `json:"name"`
	Request Input  `json:"request"`
}

// Delegate is the generic delegate activity: it loads the delegate the
// tool names and assembles the call's isolated sub-request — the
// delegate's own context, the scoped parent messages, and an input message
// with the call's parameters and the delegate's input schema. A delegate
// that cannot be loaded or refused by the allow-list fails the call at once.
func (a *Activities) Delegate(ctx context.Context, in DelegateInput) (DelegateOutput, error) {
	loader := a.Loader
	if loader == nil {
		loader = &Loader{}
	}
	d, err := loader.Load(ctx, in.Tool.Delegate)
	if errors.Is(err, ErrTransient) {
		return DelegateOutput{}, err // Temporal retries it
	}
	if err != nil {
		return DelegateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadDelegate", err)
	}
	ts := &Toolset{Vessel: d.Name}
	if len(d.Vessel.Tools) > 0 || len(d.Vessel.Processes) > 0 {
		if ts, err = Build(ctx, d.Vessel, BuildOptions{Registry: loader.Registry, Loader: loader, Actions: a.Actions}); err != nil {
			return DelegateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadDelegate", err)
		}
	}
	if d.ID == Anonymous {
		// A fresh, empty context: the input's schema is the tool's own.
		d.Input = in.Tool.Schema
	}
	output := d.Output
	if output.IsNull() {
		output = in.Tool.Output
	}
	return DelegateOutput{ID: d.ID, Name: d.Name, Request: Input{
		Toolset: ts,
		Context: SubRequest(d, in.Context, in.Params),
		Output:  outputSchema(output),
		File:    d.ID,
	}}, nil
}

// delegate runs a delegate call: the activity assembles the sub-request,
// then it runs as a child request one level deeper; its output is the
// call's result.
func delegate(ctx workflow.Context, in Input, msgs []*Message, state jsonv.Value, c *Call, t *Tool, params jsonv.Value, cr *CallResult) (jsonv.Value, error) {
	if bound := maxOr(in.MaxDepth, DefaultMaxDepth); in.Depth+1 > bound {
		return jsonv.Value{}, fmt.Errorf("delegating to %s would nest %d deep, over the bound of %d (%s)", t.Delegate, in.Depth+1, bound, chainText(in.Chain, t.Delegate))
	}
	scoped, err := Scoped(t.Scopes, msgs, state, c.Instance)
	if err != nil {
		return jsonv.Value{}, err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: delegateTimeout, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
	var out DelegateOutput
	if err := workflow.ExecuteActivity(actx, delegateName, DelegateInput{Call: c, Params: params, Tool: t, Context: scoped}).Get(ctx, &out); err != nil {
		return jsonv.Value{}, err
	}
	if out.ID != Anonymous && slices.Contains(in.Chain, out.ID) {
		return jsonv.Value{}, fmt.Errorf("delegate cycle: %s", chainText(in.Chain, out.ID))
	}
	sub := out.Request
	sub.Chain = append(slices.Clone(in.Chain), out.ID)
	sub.Depth = in.Depth + 1
	sub.MaxDepth, sub.MaxFanOut = in.MaxDepth, in.MaxFanOut
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", workflow.GetInfo(ctx).WorkflowExecution.ID, c.Index, c.Instance)))
	cr.Run = workflow.GetInfo(ctx).WorkflowExecution.ID + "-" + slug(out.Name) + "-" + hex.EncodeToString(sum[:3])
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        cr.Run,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_TERMINATE,
	})
	var res Result
	if err := workflow.ExecuteChildWorkflow(cctx, WorkflowName, sub).Get(ctx, &res); err != nil {
		return jsonv.Value{}, fmt.Errorf("delegate %s: %w", out.Name, err)
	}
	cr.Usage = res.Usage
	result := res.Output
	if t.Resolve == ResolveAhead && !t.Output.IsNull() {
		v, err := schema.NewValidator(t.Name, withoutThinking(t.Output), schema.ValidatorOptions{})
		if err != nil {
			return jsonv.Value{}, err
		}
		if err := v.Validate(result); err != nil {
			return jsonv.Value{}, fmt.Errorf("delegate %s: the result breaks its _output: %w", out.Name, err)
		}
	}
	return result, nil
}

// delegateTimeout bounds loading and assembling a delegate.
const delegateTimeout = time.Minute

func chainText(chain []string, next string) string {
	return strings.Join(append(slices.Clone(chain), next), " → ")
}

// withoutThinking is a result schema as the caller sees the result: its
// thinking fields and metrics, which the delegate fills and the engine
// splits off, neither listed nor required.
func withoutThinking(s jsonv.Value) jsonv.Value {
	switch s.Kind() {
	case jsonv.KindArray:
		out := make([]jsonv.Value, s.Len())
		for i, e := range s.Array() {
			out[i] = withoutThinking(e)
		}
		return jsonv.ArrayValue(out...)
	case jsonv.KindObject:
	default:
		return s
	}
	out := jsonv.NewObject(s.Len())
	for name, v := range s.Members() {
		switch name {
		case "properties":
			props := jsonv.NewObject(v.Len())
			for p, ps := range v.Members() {
				if !schema.IsThinking(p) && !schema.IsMetric(p) {
					props.Set(p, withoutThinking(ps))
				}
			}
			out.Set(name, props.Value())
		case "required":
			var keep []jsonv.Value
			for _, r := range v.Array() {
				if !schema.IsThinking(r.Str()) && !schema.IsMetric(r.Str()) {
					keep = append(keep, r)
				}
			}
			out.Set(name, jsonv.ArrayValue(keep...))
		default:
			out.Set(name, withoutThinking(v))
		}
	}
	return out.Value()
}
