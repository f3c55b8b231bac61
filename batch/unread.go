package batch

import (
	"slices"

	"github.com/augceo/vibe/compile"
)

// addUnread adds to names, in the order first met, what of an item's input
// no step of p reads (compile.Program.UnreadInput).
func addUnread(names []string, p *compile.Program, it Item) []string {
	if it.Error != "" {
		return names
	}
	for _, n := range p.UnreadInput(it.Input) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
