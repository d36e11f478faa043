// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/jsonkit"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// resendCalls returns the gen_ai.input.messages values of the LLM calls of convs conversations
// of turns turns each, as loadgen sends them by default (every call resends the conversation so
// far: user message, then per tool call the assistant's tool_call and the tool's response, then
// the final answer), interleaved across conversations in call order, plus the system
// instructions every call carries. Message texts are about msgBytes bytes of prose; planted
// values (if plant is set) go into each new user message.
func resendCalls(convs, turns, toolsPerTurn, msgBytes int, plant func(conv, turn int) string) (calls []string, system string) {
	rng := rand.New(rand.NewPCG(11, 12))
	text := func(size int) string {
		var sb strings.Builder
		for sb.Len() < size {
			sb.WriteString(benchWords[rng.IntN(len(benchWords))])
			sb.WriteByte(' ')
			if rng.IntN(30) == 0 {
				sb.WriteString(".\n")
			}
		}
		return sb.String()
	}
	quote := func(s string) string { return strconv.Quote(s) } // ASCII prose: a valid JSON string
	system = `[{"type":"text","content":` + quote(text(2*msgBytes)) + `}]`
	hist := make([][]string, convs)
	var perTurn [][]string
	for turn := 0; turn < turns; turn++ {
		var round []string
		for c := 0; c < convs; c++ {
			user := text(msgBytes)
			if plant != nil {
				user += " " + plant(c, turn) + " " + text(40)
			}
			hist[c] = append(hist[c], `{"role":"user","parts":[{"type":"text","content":`+quote(user)+`}]}`)
			for k := 0; k <= toolsPerTurn; k++ {
				round = append(round, "["+strings.Join(hist[c], ",")+"]")
				id := fmt.Sprintf("call_%d_%d_%d", c, turn, k)
				if k == toolsPerTurn {
					hist[c] = append(hist[c], `{"role":"assistant","parts":[{"type":"text","content":`+quote(text(msgBytes))+`}],"finish_reason":"stop"}`)
					break
				}
				hist[c] = append(hist[c],
					`{"role":"assistant","parts":[{"type":"tool_call","id":"`+id+`","name":"search","arguments":{"query":`+quote(text(120))+`}}],"finish_reason":"tool_calls"}`,
					`{"role":"tool","parts":[{"type":"tool_call_response","id":"`+id+`","response":`+quote(text(msgBytes))+`}]}`)
			}
		}
		perTurn = append(perTurn, round)
	}
	for _, r := range perTurn {
		calls = append(calls, r...)
	}
	return calls, system
}

// BenchmarkRedactResendHistory is RedactValue on agent traffic that resends its history
// (loadgen's default: 20 conversations of 5 turns, 3 tool calls per turn, 512-byte messages):
// one operation is one LLM call's gen_ai.input.messages plus its gen_ai.system_instructions, in
// call order, so the same message strings come back on every later call. "cache" is the
// Redactor with its clean-value cache (CleanCacheBytes), "nocache" the same Redactor without one,
// "copy" only copies the same bytes (the floor), "walk" only walks their JSON tokens: all four in
// the same run. Reported: ns/op and MB/s (per call), allocations, and cpu-µs/op, cpu-MB/s.
//
//	go test -run '^$' -bench RedactResendHistory -benchmem ./internal/redact/
func BenchmarkRedactResendHistory(b *testing.B) {
	calls, system := resendCalls(20, 5, 3, 512, nil)
	total := 0
	for _, c := range calls {
		total += len(c) + len(system)
	}
	size := total / len(calls)
	var cache *CleanCache // purged when the calls start over: each call is new, its history is not
	run := func(name string, f func(string)) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			i := 0
			c0 := benchtest.CPUTime()
			for b.Loop() {
				if i%len(calls) == 0 {
					cache.Purge()
				}
				f(calls[i%len(calls)])
				i++
			}
			reportCPU(b, benchtest.CPUTime()-c0, i, size)
		})
	}
	buf := make([]byte, 0, 1<<20)
	run("copy", func(s string) {
		buf = append(append(buf[:0], system...), s...)
	})
	run("walk", func(s string) {
		for _, v := range []string{system, s} {
			sc := jsonkit.GetScannerString(v)
			for {
				if _, err := sc.Next(); err != nil {
					break
				}
			}
			jsonkit.PutScanner(sc)
		}
	})
	for _, cached := range []bool{false, true} {
		name := "nocache"
		cfg := Config{HashKey: []byte("bench-key")}
		if cached {
			name = "cache"
			cache = NewCleanCache(8 << 20)
			cfg.CleanCache = cache
		}
		r, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		run(name, func(s string) {
			r.RedactValue("gen_ai.system_instructions", system)
			r.RedactValue("gen_ai.input.messages", s)
		})
	}
}
