// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"fmt"
	"testing"
)

// BenchmarkRuns compares two 200-step runs (100 LLM calls whose input history grows by two
// messages per call, 100 tool calls) that differ from the middle on: the cost of alignment plus
// message-by-message comparison of every pair. Report as a ratio between runs of this benchmark.
func BenchmarkRuns(b *testing.B) {
	a, c := historyRun(0xa, 100, 100).run(), historyRun(0xb, 100, 50).run()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := runsOf(a, c, Options{})
		if err != nil || r.First == nil || r.First.StepA != 101 {
			b.Fatalf("%v %+v", err, r.First)
		}
	}
}

// historyRun is an agent of n LLM calls, each followed by a tool call, whose input history grows
// by the call and its result; from call changeFrom on the answers say "changed".
func historyRun(id byte, n, changeFrom int) *runBuilder {
	r := newRun(id)
	hist := []Message{text("system", "You are a careful agent."), text("user", "Plan a trip.")}
	for i := 0; i < n; i++ {
		word := "same"
		if i >= changeFrom {
			word = "changed"
		}
		c := call(fmt.Sprintf("step %d %s", i, word), "lookup", map[string]any{"i": i})
		r.llm("gpt-4.1", hist, []Message{c}, "tool_calls", int64(100+i*20), 20, 100)
		res := fmt.Sprintf(`{"i":%d,"v":%q}`, i, word)
		r.tool("lookup", fmt.Sprintf(`{"i":%d}`, i), res, 10, "")
		hist = append(hist, c, resp("call_lookup", res))
	}
	return r
}
