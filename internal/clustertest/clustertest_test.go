//go:build unix

package clustertest

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// TestCluster starts a cluster, registers a namespace, starts a workflow
// (which the history service records), SIGKILLs the history service and
// starts it again: a workflow can be started again, and the first is
// still there.
func TestCluster(t *testing.T) {
	c := Start(t)
	c.CreateNamespace("clustertest", 24*time.Hour)
	tc, err := client.Dial(client.Options{HostPort: c.HostPort, Namespace: "clustertest", Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	ctx := context.Background()
	start := func(id string) error {
		_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Nothing")
		return err
	}
	if err := start("before"); err != nil {
		t.Fatalf("start a workflow: %v\nhistory:\n%s", err, c.Log("history"))
	}
	c.Kill("history")
	t0 := time.Now()
	c.StartService("history")
	waitFor(t, "a workflow to start after the history service's restart", time.Minute, func() bool { return start("after") == nil })
	t.Logf("a workflow started %s after the history service's restart", time.Since(t0).Round(time.Millisecond))
	if _, err := tc.DescribeWorkflowExecution(ctx, "before", ""); err != nil {
		t.Errorf("the workflow started before the kill: %v", err)
	}
}
