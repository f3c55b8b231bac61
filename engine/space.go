package engine

import (
	"context"
	"slices"
	"strings"

	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/augceo/vibe/internal/diskspace"
)

// The client's calls that the free space of the data directory concerns,
// by gRPC method name (the workers' polls and responses are not among
// them). A call of the first set is refused at once when the directory's
// filesystem is full; one of either set that fails then says so.
var (
	// writes, and lists: on a full disk the engine cannot record what
	// happens to a workflow, so its lists may miss workflows that exist.
	spaceFirst = methods("StartWorkflowExecution", "SignalWithStartWorkflowExecution",
		"ExecuteMultiOperation", "UpdateWorkflowExecution", "SignalWorkflowExecution",
		"RequestCancelWorkflowExecution", "TerminateWorkflowExecution",
		"ListWorkflowExecutions", "ScanWorkflowExecutions", "CountWorkflowExecutions")
	// reads of one workflow, which a full disk does not make wrong.
	spaceAfter = methods("DescribeWorkflowExecution", "QueryWorkflow",
		"GetWorkflowExecutionHistory", "PollWorkflowExecutionUpdate")
)

// withSpaceGuard returns co with spaceGuard(dir, free) among its dial
// options.
func withSpaceGuard(co client.Options, dir string, free diskspace.FreeFunc) client.Options {
	co.ConnectionOptions.DialOptions = append(slices.Clip(co.ConnectionOptions.DialOptions), grpc.WithChainUnaryInterceptor(spaceGuard(dir, free)))
	return co
}

func methods(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m["/temporal.api.workflowservice.v1.WorkflowService/"+n] = true
	}
	return m
}

// spaceGuard is a gRPC interceptor for the client of the engine on dir,
// which reads the free space there with free (nil: diskspace.Free). A
// full disk does not fail the engine's calls with a word about space: the
// server retries its database writes and the client's call times out
// ("context deadline exceeded" after 10 s), and its lists leave out the
// workflows it could not record. So the guard refuses a write or a list at
// once while dir's filesystem has less than diskspace.Min free, and a
// call of either kind that fails while it has gets an error that says "no
// space left on device on DIR", the call's own error after it. Its code is
// FailedPrecondition, which the SDK does not retry. It runs inside the
// SDK's retries, on every attempt; a call a full disk does not concern
// costs it a map lookup, one it does a statfs.
func spaceGuard(dir string, free diskspace.FreeFunc) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		first := spaceFirst[method]
		if !first && !spaceAfter[method] {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		what := spaceWhat(method)
		if first {
			if err := diskspace.Check(free, dir, what); err != nil {
				return status.Error(codes.FailedPrecondition, err.Error())
			}
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			return nil
		}
		st := status.Convert(err)
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
			codes.Unauthenticated, codes.OutOfRange, codes.Unimplemented:
			return err // the request's own fault
		}
		if space := diskspace.Check(free, dir, what); space != nil {
			return status.Error(codes.FailedPrecondition, space.Error()+" (the call failed: "+st.Message()+")")
		}
		return err
	}
}

// spaceWhat says what a full disk keeps a method from doing.
func spaceWhat(method string) string {
	name := method[strings.LastIndexByte(method, '/')+1:]
	switch {
	case strings.HasPrefix(name, "List"), strings.HasPrefix(name, "Scan"), strings.HasPrefix(name, "Count"):
		return "the engine cannot record what happens to processes, so a list now may miss some"
	}
	return "the engine cannot write " + dbFile
}
