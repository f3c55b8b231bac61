package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// searchAttributeTypes returns attrs by name and type.
func searchAttributeTypes(attrs []temporal.SearchAttributeKey) map[string]enumspb.IndexedValueType {
	m := make(map[string]enumspb.IndexedValueType, len(attrs))
	for _, a := range attrs {
		m[a.GetName()] = a.GetValueType()
	}
	return m
}

// registerSearchAttributes adds those of attrs that the namespace lacks. Listing first keeps it a read on every start after the
// first, and avoids needing the right to add on a cluster that has them.
func registerSearchAttributes(ctx context.Context, c client.Client, namespace string, attrs []temporal.SearchAttributeKey) error {
	if len(attrs) == 0 {
		return nil
	}
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range searchAttributeTypes(attrs) {
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
	return waitSearchable(ctx, c, namespace, attrs)
}

// waitSearchable waits until visibility queries accept attrs.
// Servers learn of added attributes when their namespace cache refreshes
// (up to about ten seconds); until then a query naming them is invalid.
func waitSearchable(ctx context.Context, c client.Client, namespace string, attrs []temporal.SearchAttributeKey) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var terms []string
	for _, a := range attrs {
		if a.GetValueType() == enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			terms = append(terms, a.GetName()+" = ''")
		}
	}
	if len(terms) == 0 {
		return nil
	}
	query := strings.Join(terms, " AND ")
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
