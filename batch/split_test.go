package batch

import (
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// TestSplit: the calls of one step go in as few activities as fit within
// half the payload limit each, in order; a call bigger than that goes
// alone.
func TestSplit(t *testing.T) {
	big := func(n int) durable.ActionInput {
		return durable.ActionInput{Step: "s", Input: jsonv.StringValue(strings.Repeat("x", n))}
	}
	third := durable.MaxPayloadSize / 6
	tests := []struct {
		name  string
		calls []durable.ActionInput
		want  [][]int
	}{
		{"small ones together", []durable.ActionInput{big(10), big(10), big(10)}, [][]int{{0, 1, 2}}},
		{"two by two", []durable.ActionInput{big(third), big(third), big(third), big(third)}, [][]int{{0, 1}, {2, 3}}},
		{"a huge one alone", []durable.ActionInput{big(10), big(durable.MaxPayloadSize), big(10)}, [][]int{{0}, {1}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &group{items: make([]member, len(tt.calls))}
			items := make([]int, len(tt.calls))
			for i := range items {
				g.items[i].call, items[i] = tt.calls[i], i
			}
			got := g.split(items)
			if len(got) != len(tt.want) {
				t.Fatalf("parts %v, want %v", got, tt.want)
			}
			for k := range got {
				if !slices.Equal(got[k], tt.want[k]) {
					t.Errorf("parts %v, want %v", got, tt.want)
				}
			}
		})
	}
}
