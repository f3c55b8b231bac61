package engine

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Search attributes registered on the engine's namespace. Workflows set them
// with workflow.UpsertTypedSearchAttributes, e.g.
// ProcessAttribute.ValueSet("invoice"), and visibility queries filter on
// their names, e.g. `VibeProcess = "invoice" AND VibeStatus = "waiting"`.
var (
	// ProcessAttribute (VibeProcess) names the Vibe process a workflow runs.
	ProcessAttribute = temporal.NewSearchAttributeKeyKeyword("VibeProcess")
	// StatusAttribute (VibeStatus) is the Vibe-level status of a process,
	// finer than Temporal's own (for example waiting for a person).
	StatusAttribute = temporal.NewSearchAttributeKeyKeyword("VibeStatus")
)

// searchAttributeTypes returns Vibe's search attributes by name and type.
func searchAttributeTypes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		ProcessAttribute.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		StatusAttribute.GetName():  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// registerSearchAttributes adds those of Vibe's search attributes that the
// namespace lacks. Listing first keeps it a read on every start after the
// first, and avoids needing the right to add on a cluster that has them.
func registerSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range searchAttributeTypes() {
		got, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case got != typ:
			return fmt.Errorf("search attribute %s exists with type %s, want %s", name, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return waitSearchable(ctx, c, namespace)
}

// waitSearchable waits until visibility queries accept Vibe's attributes.
// Servers learn of added attributes when their namespace cache refreshes
// (up to about ten seconds); until then a query naming them is invalid.
func waitSearchable(ctx context.Context, c client.Client, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	query := fmt.Sprintf("%s = '' AND %s = ''", ProcessAttribute.GetName(), StatusAttribute.GetName())
	for {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace,
			Query:     query,
		})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes added but not yet queryable: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
