//go:build unix

package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/clustertest"
	"github.com/augceo/vibe/internal/llmtest"
)

var clusterItems = flag.Int("cluster.items", 0, "BenchmarkBatchCluster: items of the cluster's runs (0: -batch.items)")

// BenchmarkBatchCluster runs `vibe batch` over comments at K=32, C=8
// (256 items in flight), against a model that answers at once and with
// an HTTP action per item, as BenchmarkBatchMemory does, in three
// configurations in one run:
//
//   - engine=embedded: vibe batch on its own embedded engine (SQLite),
//     -batch.items items;
//   - engine=cluster/workers=1: vibe batch --temporal on a Temporal
//     cluster on PostgreSQL (internal/clustertest: frontend, history,
//     matching and worker services as processes of their own), its own
//     worker the only Vibe worker, -cluster.items items (default
//     -batch.items);
//   - engine=cluster/workers=2: the same with a `vibe worker --temporal`
//     beside it, polling the same namespace.
//
// Each reports items/s over vibe batch's wall time (its start and its
// engine's, or its connection to the cluster, included), and the CPU each
// process used meanwhile as a percentage of that wall time (200 is both
// cores of a 2-core machine): vibe batch (batch-cpu%), the second Vibe
// worker (worker2-cpu%), each Temporal service (frontend-cpu% …;
// tworker-cpu% is Temporal's own worker service), PostgreSQL with its
// backends (postgres-cpu%), this test process, which serves the model and
// the action (bench-cpu%), the whole machine (machine-cpu%), and of that
// what none of these used: other work on the machine (others-cpu%); and
// the CPU time all of these but the machine's other work took per item
// (cpu-ms/item), which other work on the machine changes much less than
// the rate. The cluster is started after the embedded run, so that
// its idle services do not share the cores with it; each namespace has its
// search attributes and a polling worker before the clock starts. Without
// PostgreSQL the cluster runs are skipped. With -count N each
// configuration runs N times in a row, on one cluster started once.
//
//	go test ./cmd/vibe -run XXX -bench BenchmarkBatchCluster -benchtime 1x -count 3 -timeout 0 [-batch.items 10000] [-cluster.items N]
func BenchmarkBatchCluster(b *testing.B) {
	model := llmtest.NewServer(b, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	// The record action of every run and every worker: its effects are
	// counted per idempotency key, which names the batch and the item.
	led := &tally{effects: map[string]int{}}
	actions := httptest.NewServer(led)
	b.Cleanup(actions.Close)
	af := filepath.Join(b.TempDir(), "actions.json")
	os.WriteFile(af, []byte(fmt.Sprintf(`{"record": %q}`, actions.URL)), 0o644)
	work := []string{"--actions-file", af, "--llm", "openai:m", "--llm-base-url", model.URL}
	b.Run("engine=embedded", func(b *testing.B) {
		benchBatchRun(b, *batchItems, func(dir string) []string { return []string{"--data", filepath.Join(dir, "data")} }, work, led, nil)
	})
	cl := clustertest.Start(b)
	namespaces := 0
	for _, workers := range []int{1, 2} {
		// With -count, each sub-benchmark runs that many times on the one
		// cluster: each time on a namespace of its own.
		b.Run(fmt.Sprintf("engine=cluster/workers=%d", workers), func(b *testing.B) {
			namespaces++
			ns := fmt.Sprintf("bench-%d-w%d", namespaces, workers)
			cl.CreateNamespace(ns, 24*time.Hour)
			tf := []string{"--temporal", cl.HostPort, "--namespace", ns}
			// A vibe worker registers the search attributes (as any Vibe
			// process does on a namespace that lacks them) and polls;
			// vibe doctor passes once both hold. With one worker it stops
			// again: vibe batch's own worker is then the only one.
			second, out := child(b, append(append([]string{"worker"}, work...), tf...)...)
			for deadline := time.Now().Add(2 * time.Minute); ; {
				var stdout, stderr bytes.Buffer
				if Main(append([]string{"doctor"}, tf...), strings.NewReader(""), &stdout, &stderr) == 0 {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("vibe doctor did not pass on %s:\n%s%s\nvibe worker:\n%s", ns, stdout.String(), stderr.String(), out)
				}
				time.Sleep(500 * time.Millisecond)
			}
			pids := map[string]int{}
			if workers == 1 {
				second.Process.Kill()
				second.Wait()
			} else {
				pids["worker2"] = second.Process.Pid
			}
			n := *clusterItems
			if n == 0 {
				n = *batchItems
			}
			benchBatchRun(b, n, func(string) []string { return tf }, work, led, func() map[string]int {
				for name, pid := range cl.Pids() {
					if name == "worker" {
						name = "tworker" // Temporal's worker service, not Vibe's
					}
					pids[name] = pid
				}
				return pids
			})
		})
	}
}

// benchBatchRun runs vibe batch over n comments for each of b's
// iterations, with the engine flags engine gives for the run's directory
// and the worker's flags work (model, actions); it checks each item has
// its result and its action's effect once (in led), and reports items/s
// and, where /proc has them, the CPU of vibe batch, of the processes pids
// names (read at the start of each run) and of this process.
func benchBatchRun(b *testing.B, n int, engine func(dir string) []string, work []string, led *tally, pids func() map[string]int) {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "%q\n", fmt.Sprintf("comment %d", i))
	}
	w.Flush()
	f.Close()
	os.WriteFile(filepath.Join(dir, "moderate.json"), []byte(moderateProcess), 0o644)
	var wall time.Duration
	cpu := map[string]float64{} // CPU seconds, by process
	run := 0
	for b.Loop() {
		b.StopTimer()
		run++
		_, keysBefore, _ := led.counts()
		out := filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", run))
		var watched map[string]int
		if pids != nil {
			watched = pids()
		}
		before := map[string]float64{}
		for name, pid := range watched {
			before[name] = treeCPU(pid)
		}
		selfBefore, machineBefore := treeCPU(0), machineCPU()
		b.StartTimer()
		start := time.Now()
		cmd := exec.Command(os.Args[0], append(append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"),
			"--out", out, "--id", fmt.Sprintf("bench-%d-%d", run, time.Now().UnixNano()), "--batch-size", "32", "--concurrency", "8"},
			work...), engine(dir)...)...)
		cmd.Env = append(os.Environ(), "VIBE_TEST_MAIN=1", "VIBE_LOG=warn")
		var cout lockedBuffer
		cmd.Stdout, cmd.Stderr = &cout, &cout
		err := cmd.Run()
		took := time.Since(start)
		b.StopTimer()
		machine := machineCPU() - machineBefore
		self := treeCPU(0) - selfBefore
		for name, pid := range watched {
			cpu[name] += treeCPU(pid) - before[name]
		}
		if err != nil {
			b.Fatalf("vibe batch: %v\n%s", err, cout.String())
		}
		if os.Getenv("VIBE_BENCH_SHOW") != "" {
			b.Logf("%s", cout.String())
		}
		wall += took
		cpu["batch"] += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		cpu["bench"] += self
		cpu["machine"] += machine
		data, _ := os.ReadFile(out)
		if lines := bytes.Count(data, []byte("\n")); lines != n {
			b.Fatalf("%d result lines, want %d", lines, n)
		}
		if _, keys, repeated := led.counts(); keys-keysBefore != n || len(repeated) > 0 {
			b.Fatalf("the record action's effect was applied for %d items, want %d; %d keys more than once", keys-keysBefore, n, len(repeated))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n*run)/wall.Seconds(), "items/s")
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	ours := 0.0
	for name, s := range cpu {
		b.ReportMetric(100*s/wall.Seconds(), name+"-cpu%")
		if name != "machine" {
			ours += s
		}
	}
	b.ReportMetric(100*(cpu["machine"]-ours)/wall.Seconds(), "others-cpu%")
	b.ReportMetric(1000*ours/float64(n*run), "cpu-ms/item")
}

// treeCPU is the CPU time, in seconds, of process pid (0: this one): with
// its children's, those it has waited for and those still running, and
// theirs, as PostgreSQL's backends are the postmaster's; 0 when /proc
// does not have it. This process's own children are left out: vibe batch
// is counted apart.
func treeCPU(pid int) float64 {
	self := pid == 0
	if self {
		pid = os.Getpid()
	}
	fields := procStat(pid)
	if fields == nil {
		return 0
	}
	ticks := 0
	for i, f := range fields[11:15] { // utime, stime, cutime, cstime
		if self && i >= 2 {
			break
		}
		v, _ := strconv.Atoi(f)
		ticks += v
	}
	s := float64(ticks) / 100 // USER_HZ: 100 on Linux
	if self {
		return s
	}
	for _, c := range childPids(pid) {
		s += treeCPU(c)
	}
	return s
}

// procStat is the fields of /proc/PID/stat after the command's name: its
// first is the state (field 3 of proc(5)), its second the parent's pid.
func procStat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 15 {
		return nil
	}
	return fields
}

// childPids are the running processes whose parent is pid.
func childPids(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(p); f != nil && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// machineCPU is the busy CPU time of the whole machine, in seconds, from
// /proc/stat: every core's time but idle and iowait.
func machineCPU() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0
	}
	busy := 0
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // steal is not this machine's; guest is in user
			break
		}
		v, _ := strconv.Atoi(f)
		busy += v
	}
	return float64(busy) / 100
}
