package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// Check is one finding of Diagnose.
type Check struct {
	// Name is what was checked: "reachable", "tls", "namespace",
	// "search attribute NAME" or "worker".
	Name string
	// OK reports whether the cluster is ready in this respect.
	OK bool
	// Detail says what was found.
	Detail string
	// Fix, when OK is false, says how to make it so: the command to run.
	Fix string
}

// Diagnose checks the Temporal cluster at opts.HostPort before Vibe uses
// it, and changes nothing there: that it answers (and its version), how
// the client connects (opts.TLS), that opts.Namespace exists (and its
// retention), that each of opts.SearchAttributes is registered with its
// type, and that a worker polls taskQueue. A check that cannot be made
// because an earlier one failed is left out. Each failed check says, in
// Fix, the command that mends it. Diagnose returns an error only when opts
// name no cluster.
func Diagnose(ctx context.Context, opts Options, taskQueue string) ([]Check, error) {
	if opts.HostPort == "" {
		return nil, errors.New("diagnose: Options.HostPort names no cluster")
	}
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	var checks []Check
	co := opts.ClientOptions
	co.HostPort, co.Namespace = opts.HostPort, ns
	co.Logger = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	if opts.TLS != nil {
		co.ConnectionOptions.TLS = opts.TLS
	}
	checks = append(checks, tlsCheck(co.ConnectionOptions.TLS))
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, co)
	if err != nil {
		fix := "check the address, and that the cluster's frontend listens there"
		if co.ConnectionOptions.TLS == nil {
			fix += "; a cluster that requires TLS (Temporal Cloud does) needs --tls-cert, --tls-key (and --tls-ca unless the system's CAs sign its certificate)"
		}
		return append(checks, Check{Name: "reachable", Detail: fmt.Sprintf("cannot reach Temporal at %s: %v", opts.HostPort, err), Fix: fix}), nil
	}
	defer c.Close()
	version := "unknown version"
	if info, err := c.WorkflowService().GetSystemInfo(dctx, &workflowservice.GetSystemInfoRequest{}); err == nil && info.GetServerVersion() != "" {
		version = "server " + info.GetServerVersion()
	}
	checks = append(checks, Check{Name: "reachable", OK: true, Detail: fmt.Sprintf("Temporal at %s (%s)", opts.HostPort, version)})

	desc, err := c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if _, missing := errors.AsType[*serviceerror.NamespaceNotFound](err); missing {
		return append(checks, Check{Name: "namespace", Detail: fmt.Sprintf("no namespace %q", ns),
			Fix: fmt.Sprintf("temporal operator namespace create --namespace %s --retention 72h (on Temporal Cloud: tcld namespace create, or the Cloud UI)", ns)}), nil
	}
	if err != nil {
		return append(checks, Check{Name: "namespace", Detail: fmt.Sprintf("describe namespace %q: %v", ns, err),
			Fix: "the client needs the right to describe the namespace"}), nil
	}
	retention := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	checks = append(checks, Check{Name: "namespace", OK: true, Detail: fmt.Sprintf("%s: finished workflows, results included, are kept %s", ns, retention)})

	checks = append(checks, searchAttributeChecks(dctx, c, ns, opts)...)
	return append(checks, workerCheck(dctx, c, ns, taskQueue)), nil
}

// tlsCheck says how the client connects; either way is a choice, not a
// fault, so it is always OK.
func tlsCheck(cfg *tls.Config) Check {
	if cfg == nil {
		return Check{Name: "tls", OK: true, Detail: "plain text (no client certificate): right for a cluster on a private network; Temporal Cloud and a cluster with mutual TLS need --tls-cert and --tls-key"}
	}
	var parts []string
	if len(cfg.Certificates) > 0 && len(cfg.Certificates[0].Certificate) > 0 {
		if cert, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err == nil {
			parts = append(parts, fmt.Sprintf("client certificate %q, valid until %s", cert.Subject.String(), cert.NotAfter.Format(time.DateOnly)))
		}
	} else {
		parts = append(parts, "no client certificate")
	}
	if cfg.RootCAs != nil {
		parts = append(parts, "the server verified against the given CA")
	} else {
		parts = append(parts, "the server verified against the system's CAs")
	}
	return Check{Name: "tls", OK: true, Detail: "TLS: " + strings.Join(parts, "; ")}
}

// searchAttributeChecks checks each of opts.SearchAttributes, by name.
func searchAttributeChecks(ctx context.Context, c client.Client, ns string, opts Options) []Check {
	if len(opts.SearchAttributes) == 0 {
		return nil
	}
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return []Check{{Name: "search attributes", Detail: fmt.Sprintf("cannot list them: %v", err),
			Fix: fmt.Sprintf("temporal operator search-attribute list --namespace %s shows them; the client needs the right to list them", ns)}}
	}
	want := searchAttributeTypes(opts.SearchAttributes)
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	var checks []Check
	for _, name := range names {
		typ := want[name]
		check := Check{Name: "search attribute " + name}
		got, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			check.Detail = fmt.Sprintf("missing: Vibe's workflows set it and its lists (vibe ps, vibe batches, the console) filter by it (%s)", typeName(typ))
			check.Fix = fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s "+
				"(or start vibe serve or vibe worker on the cluster: Vibe adds its search attributes at start where the cluster lets it; on Temporal Cloud: tcld namespace search-attributes add --namespace %s --search-attribute %s=%s)",
				ns, name, typeName(typ), ns, name, typeName(typ))
		case got != typ:
			check.Detail = fmt.Sprintf("registered as %s, Vibe needs %s", typeName(got), typeName(typ))
			check.Fix = fmt.Sprintf("a search attribute's type cannot change: use another namespace, or remove it (temporal operator search-attribute remove --namespace %s --name %s) and add it as %s", ns, name, typeName(typ))
		default:
			check.OK, check.Detail = true, typeName(typ)
		}
		checks = append(checks, check)
	}
	return checks
}

// typeName is a search attribute type as the Temporal CLI writes it.
func typeName(t enumspb.IndexedValueType) string {
	s := strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_")
	switch s {
	case "KEYWORD_LIST":
		return "KeywordList"
	case "DATETIME":
		return "Datetime"
	}
	return s[:1] + strings.ToLower(s[1:])
}

// workerCheck checks that a worker polls taskQueue, for workflows and for
// activities.
func workerCheck(ctx context.Context, c client.Client, ns, taskQueue string) Check {
	check := Check{Name: "worker"}
	var counts []string
	polled := true
	for _, kind := range []struct {
		name string
		typ  enumspb.TaskQueueType
	}{{"workflows", enumspb.TASK_QUEUE_TYPE_WORKFLOW}, {"activities", enumspb.TASK_QUEUE_TYPE_ACTIVITY}} {
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: ns, TaskQueue: &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: kind.typ,
		})
		if err != nil {
			check.Detail = fmt.Sprintf("cannot describe the task queue %s: %v", taskQueue, err)
			check.Fix = "the client needs the right to describe task queues"
			return check
		}
		ids := map[string]bool{}
		for _, p := range resp.GetPollers() {
			ids[p.GetIdentity()] = true
		}
		counts = append(counts, fmt.Sprintf("%d polling %s", len(ids), kind.name))
		polled = polled && len(ids) > 0
	}
	check.Detail = fmt.Sprintf("task queue %s: %s (pollers seen in the last minutes)", taskQueue, strings.Join(counts, ", "))
	if !polled {
		check.Fix = fmt.Sprintf("start a worker: vibe serve --temporal HOST:PORT --namespace %s … (serves the API and works), or vibe worker --temporal HOST:PORT --namespace %s --llm … --actions-file …", ns, ns)
		return check
	}
	check.OK = true
	return check
}
