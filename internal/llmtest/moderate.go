package llmtest

import (
	"fmt"
	"strconv"
	"strings"
)

// Comments is a JSONL input of n comments: "comment 1" to "comment n",
// each a JSON string on a line of its own.
func Comments(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%q\n", fmt.Sprintf("comment %d", i))
	}
	return b.String()
}

// Verdict is the moderation tests' answer of a step (assess or decide) to
// a comment's prompt, for Multiplexed: "comment N" is negative and hidden
// when N is odd, positive and published when it is even.
func Verdict(step, prompt string, _ bool) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(prompt, "comment "))
	switch {
	case step == "assess" && n%2 == 1:
		return `{"sentiment":"negative"}`
	case step == "assess":
		return `{"sentiment":"positive"}`
	case n%2 == 1:
		return `{"decision":"hide"}`
	}
	return `{"decision":"publish"}`
}
