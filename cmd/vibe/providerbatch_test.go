package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/llmtest"
)

// TestProviderBatchCrash SIGKILLs vibe batch --provider-batch (its
// embedded engine and worker with it) at each of the four moments of a
// provider batch — the request file uploaded but its id not yet taken,
// the batch created but its id not yet recorded, the batch in progress,
// its results being read — and runs the same command again: nothing is
// uploaded or submitted twice, no call goes direct, each action's effect
// is applied once and the output holds every item once, in order.
func TestProviderBatchCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills vibe batch four times")
	}
	const n, k = 200, 16
	for _, moment := range []string{llmtest.EventUpload, llmtest.EventBatch, llmtest.EventPoll, llmtest.EventResults} {
		t.Run(moment, func(t *testing.T) {
			dir, led := batchSetup(t, n, nil, 0)
			var (
				mu     sync.Mutex
				victim *exec.Cmd
				killed time.Time
			)
			model := llmtest.NewServer(t, llmtest.Multiplexed(verdict), llmtest.Options{OnEvent: func(e llmtest.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind != moment || !killed.IsZero() || victim == nil {
					return
				}
				killed = time.Now()
				victim.Process.Signal(syscall.SIGKILL)
				time.Sleep(200 * time.Millisecond) // dead before this is answered
			}})
			out := filepath.Join(dir, "out.jsonl")
			args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
				"--batch-size", fmt.Sprint(k), "--data", filepath.Join(dir, "data"), "--actions-file", filepath.Join(dir, "actions.json"),
				"--llm", "openai:test-model", "--llm-base-url", model.URL, "--provider-batch", "--provider-batch-poll", "50ms"}
			mu.Lock()
			first, firstOut := child(t, args...)
			victim = first
			mu.Unlock()
			first.Wait()
			mu.Lock()
			if killed.IsZero() {
				mu.Unlock()
				t.Fatalf("vibe batch ended before the %s moment:\n%s", moment, firstOut)
			}
			mu.Unlock()
			began := time.Now()
			again, againOut := child(t, args...)
			if err := again.Wait(); err != nil {
				t.Fatalf("rerun: %v\n%s\nfirst run:\n%s", err, againOut, firstOut)
			}
			t.Logf("killed at %s; the rerun took %s: %s", moment, time.Since(began).Round(time.Millisecond), lastLine(againOut.String()))
			checkResults(t, readResults(t, out), n, nil)
			b := model.Batches
			if b.Uploads() != 1 || b.Created() != 1 {
				t.Errorf("%d request files uploaded and %d provider batches created, want 1 each", b.Uploads(), b.Created())
			}
			sub := b.Submitted()
			if len(sub) != (n+k-1)/k {
				t.Errorf("%d requests submitted, want %d", len(sub), (n+k-1)/k)
			}
			for id, times := range sub {
				if times != 1 {
					t.Errorf("request %s submitted %d times", id, times)
				}
			}
			if model.Requests() != 0 {
				t.Errorf("%d direct model requests, want none", model.Requests())
			}
			if calls, keys, repeated := led.counts(); keys != n || len(repeated) > 0 {
				t.Errorf("the record action's effect was applied for %d items (%d calls, repeated %v), want %d once each", keys, calls, repeated, n)
			}
		})
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
