package watch_test

import (
	"context"
	"fmt"
	"time"

	"github.com/augceo/vibe/internal/watch"
)

func ExampleChanges() {
	// A job's status as another service reports it, read after read.
	reads := []string{"queued", "queued", "running", "running", "running", "done"}
	n := 0
	read := func(context.Context) (string, error) {
		s := reads[n]
		n++
		return s, nil
	}
	opts := watch.Options[string]{
		Interval: time.Millisecond,
		Done:     func(s string) bool { return s == "done" },
	}
	for status, err := range watch.Changes(context.Background(), read, opts) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(status)
	}
	fmt.Println(n, "reads")
	// Output:
	// queued
	// running
	// done
	// 6 reads
}
