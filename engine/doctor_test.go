package engine

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// TestDiagnose checks the embedded engine as a cluster with mutual TLS:
// with its client certificate every check passes but the worker's (none
// polls); a search attribute the namespace lacks is named, with the
// command that adds it; a namespace it lacks, with the command that
// creates it; without the certificate, the engine cannot be reached.
func TestDiagnose(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	have := temporal.NewSearchAttributeKeyKeyword("DiagnoseHave")
	e := startEngine(t, Options{SearchAttributes: []temporal.SearchAttributeKey{have}})
	ctx := context.Background()
	byName := func(checks []Check) map[string]Check {
		m := map[string]Check{}
		for _, c := range checks {
			m[c.Name] = c
		}
		return m
	}

	missing := temporal.NewSearchAttributeKeyKeyword("DiagnoseMissing")
	checks, err := Diagnose(ctx, Options{HostPort: e.HostPort(), TLS: clientTLS(t, e),
		SearchAttributes: []temporal.SearchAttributeKey{have, missing}}, taskQueue)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(checks)
	for name, ok := range map[string]bool{"tls": true, "reachable": true, "namespace": true,
		"search attribute DiagnoseHave": true, "search attribute DiagnoseMissing": false, "worker": false} {
		if c, found := got[name]; !found || c.OK != ok {
			t.Errorf("check %s: %+v, want OK %v", name, c, ok)
		}
	}
	if d := got["tls"].Detail; !strings.Contains(d, "client certificate") || !strings.Contains(d, "the given CA") {
		t.Errorf("tls: %s", d)
	}
	if f := got["search attribute DiagnoseMissing"].Fix; !strings.HasPrefix(f, "temporal operator search-attribute create --namespace default --name DiagnoseMissing --type Keyword") {
		t.Errorf("the missing search attribute's fix: %s", f)
	}
	if f := got["worker"].Fix; !strings.Contains(f, "vibe worker --temporal") {
		t.Errorf("the worker's fix: %s", f)
	}

	checks, _ = Diagnose(ctx, Options{HostPort: e.HostPort(), TLS: clientTLS(t, e), Namespace: "absent"}, taskQueue)
	if c := byName(checks)["namespace"]; c.OK || !strings.HasPrefix(c.Fix, "temporal operator namespace create --namespace absent") {
		t.Errorf("an absent namespace: %+v", c)
	}
	checks, _ = Diagnose(ctx, Options{HostPort: e.HostPort()}, taskQueue)
	if c := byName(checks)["reachable"]; c.OK || !strings.Contains(c.Fix, "--tls-cert") {
		t.Errorf("plain text to a mutual-TLS engine: %+v", checks)
	}
}
