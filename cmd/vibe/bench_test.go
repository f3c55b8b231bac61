package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// rssMB reads a process's resident memory from /proc.
func rssMB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skip("no /proc to read memory from")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkServeMemory measures the resident memory of a `vibe serve`
// child process at rest, then after it ran b.N one-chunk processes (16 at
// a time) against a model that answers at once.
//
//	go test ./cmd/vibe -run XXX -bench BenchmarkServeMemory -benchtime 500x
func BenchmarkServeMemory(b *testing.B) {
	model := llmtest.New(b, llmtest.Fixed(`{"draft":{"text":"hello"}}`))
	addr := freeAddr(b)
	cmd, out := child(b, "serve", "--data", b.TempDir(), "--addr", addr, "--llm", "openai:m", "--llm-base-url", model.URL)
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := c.List(ctx, process.ListOptions{Limit: 1}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("vibe serve did not start:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // let start-up settle
	atRest := rssMB(b, cmd.Process.Pid)
	doc := mustJSON(b, `{"title":"bench","type":"object","properties":{"llmContext1":{"properties":{"draft":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}}}`)
	b.ResetTimer()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := c.Start(ctx, process.StartOptions{Document: doc})
			if err != nil {
				b.Error(err)
				return
			}
			for {
				info, err := c.Get(ctx, st.ID)
				if err != nil {
					b.Error(err)
					return
				}
				if info.Status == process.Completed {
					return
				}
				if info.Status == process.Failed {
					b.Errorf("%s failed: %s", st.ID, *info.Error)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(atRest, "rss-at-rest-MB")
	b.ReportMetric(rssMB(b, cmd.Process.Pid), "rss-after-MB")
}
