package batch

import "testing"

// TestGroupOf: a group holds DefaultSize items, or K when it is larger, or
// the K given; a batch of at most oneWave items whose calls the calls at
// once take whole is one group, which runs the actions of the groups it
// stands for.
func TestGroupOf(t *testing.T) {
	k := func(n int) []ChunkSize { return []ChunkSize{{Chunk: "c", K: n}} }
	tests := []struct {
		name    string
		opts    Options
		sizes   []ChunkSize
		calls   int
		want    int
		actions int
	}{
		{"K given", Options{Size: 8, Total: 100}, k(8), 32, 8, 0},
		{"default", Options{Total: 1000}, k(32), 32, 32, 0},
		{"K above the default", Options{Total: 1000}, k(64), 32, 64, 32},
		{"one wave", Options{Total: 100}, k(4), 32, 100, 64},
		{"one wave of a large K", Options{Total: 100}, k(64), 32, 100, 64},
		{"more calls than at once", Options{Total: 100}, k(4), 16, 32, 0},
		{"past one wave's bound", Options{Total: oneWave + 1}, k(4), 64, 32, 0},
		{"stdin: no total", Options{}, k(4), 32, 32, 0},
		{"provider batches", Options{Total: 100, Call: CallOptions{ProviderBatch: true}}, k(4), 32, 32, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := groupOf(tt.opts, tt.sizes, tt.calls); got != tt.want {
				t.Errorf("groupOf = %d, want %d", got, tt.want)
			}
			if got := groupActions(tt.want); got != tt.actions {
				t.Errorf("groupActions(%d) = %d, want %d", tt.want, got, tt.actions)
			}
		})
	}
}
