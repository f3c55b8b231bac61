package process_test

import (
	"context"
	"fmt"
	"time"

	"github.com/augceo/vibe/process"
)

func ExampleWatch() {
	// get stands for Client.Get, or a server's (api.Client.Get): here a
	// process that runs two chunks, read after read.
	views := []process.View{
		{Status: process.Running, Done: []string{}},
		{Status: process.Running, Done: []string{}},
		{Status: process.Running, Done: []string{"LLM_draft"}},
		{Status: process.Completed, Done: []string{"LLM_draft", "SERVER_send"}},
	}
	n := 0
	get := func(ctx context.Context, id string) (*process.Info, error) {
		v := views[n]
		n++
		return &process.Info{ID: id, Process: "send-mail", View: v}, nil
	}
	// With a process.Client c: c.Watch(ctx, id, process.WatchOptions{}).
	for info, err := range process.Watch(context.Background(), get, "send-mail-1", process.WatchOptions{Interval: time.Millisecond}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(info.Status, info.Done)
	}
	// Output:
	// running []
	// running [LLM_draft]
	// completed [LLM_draft SERVER_send]
}
