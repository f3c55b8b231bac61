package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/request"
)

func newRequestsCmd(io stdio) *cobra.Command {
	var (
		ef engineFlags
		lf listFlags
	)
	cmd := &cobra.Command{
		Use:   "requests [--limit N | --all] [--json]",
		Short: "List Vessel requests, newest first",
		Long: `Requests lists the Vessel requests (vibe vessel, vibe plan, POST /v1/requests)
on the engine, newest first: a delegate's sub-request is shown in its call, not
here. It uses the vibe serve that has --data if one runs.`,
		Example: `  vibe requests
  vibe requests --all --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var r api.Requests = noRequests{}
			if !ef.noData() {
				c, done, err := connectRequests(ctx, &ef)
				if err != nil {
					return err
				}
				defer done()
				r = c
			}
			return listPages(io, &lf,
				func(opts process.ListOptions) ([]request.Summary, string, error) {
					page, err := r.List(ctx, opts)
					return page.Requests, page.Next, err
				},
				func(s request.Summary) time.Time { return s.StartedAt },
				"ID\tVESSEL\tSTATUS\tSTARTED",
				func(s request.Summary) string {
					return fmt.Sprintf("%s\t%s\t%s\t%s", s.ID, s.Vessel, s.Status, s.StartedAt.Local().Format(time.DateTime))
				})
		},
	}
	ef.add(cmd)
	lf.add(cmd, "requests")
	return cmd
}

// connectRequests returns the requests of the vibe serve that has the data
// directory, or of the engine started here with a worker that runs
// nothing.
func connectRequests(ctx context.Context, ef *engineFlags) (api.Requests, func(), error) {
	if c, ok := ef.runningServer(); ok {
		return c.Requests(), func() {}, nil
	}
	l, err := startLocal(ctx, quietIO, ef, nil, nil, quietLogger())
	if err != nil {
		return nil, nil, err
	}
	return l.Requests, func() { l.Close() }, nil
}

// noRequests are the requests of a data directory that does not exist:
// none.
type noRequests struct{ api.Requests }

func (noRequests) List(context.Context, request.ListOptions) (request.Page, error) {
	return request.Page{}, nil
}
