//go:build unix

package clustertest

import (
	"testing"
	"time"
)

// TestCluster starts a cluster, registers a namespace, and SIGKILLs and
// restarts its history service: the cluster serves again.
func TestCluster(t *testing.T) {
	c := Start(t)
	c.CreateNamespace("clustertest", 24*time.Hour)
	c.Kill("history")
	t0 := time.Now()
	c.StartService("history")
	c.WaitReady(time.Minute)
	t.Logf("history back in %s", time.Since(t0).Round(time.Millisecond))
}
