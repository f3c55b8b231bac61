// Command calendar-server is the calendar-mcp example's MCP server: a
// made-up calendar (package calendar) on standard input and output, for
// Vibe's actions file to start.
//
//	calendar-server [-unavailable N]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/examples/calendar-mcp/calendar"
)

func main() {
	unavailable := flag.Int("unavailable", 0, "fail the first `N` send_invitation calls, as a flaky mail server would")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := calendar.Server(calendar.Options{Unavailable: *unavailable}).Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "calendar-server:", err)
		os.Exit(1)
	}
}
