// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/jsonkit"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

var benchWords = strings.Fields(`the agent called tool search with query weather forecast for tomorrow and
returned results including temperature humidity wind speed please summarise the following document
about quarterly revenue growth customers churn pipeline deployment kubernetes cluster error retry
timeout function arguments output assistant user system message content model response tokens
order invoice shipment tracking number status delivered pending refund policy section paragraph`)

// benchMessages returns n gen_ai.input.messages values of about size bytes each: a system prompt,
// a user turn, an assistant tool call (JSON arguments in a string) and a tool result, with the
// values of plant (if any) spread through the text.
func benchMessages(n, size int, plant func(i int) []string) []string {
	rng := rand.New(rand.NewPCG(5, 6))
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
	out := make([]string, n)
	for i := range out {
		var vals []string
		if plant != nil {
			vals = plant(i)
		}
		user := text(size / 4)
		for _, v := range vals {
			user += " also " + v + " " + text(40)
		}
		args, _ := json.Marshal(map[string]any{"query": text(40), "limit": 10, "units": "metric"})
		msgs := []map[string]any{
			{"role": "system", "parts": []map[string]any{{"type": "text", "content": text(size / 4)}}},
			{"role": "user", "parts": []map[string]any{{"type": "text", "content": user}}},
			{"role": "assistant", "parts": []map[string]any{{"type": "tool_call", "id": fmt.Sprintf("call_%d", i), "name": "search", "arguments": string(args)}}},
			{"role": "tool", "parts": []map[string]any{{"type": "tool_call_response", "id": fmt.Sprintf("call_%d", i), "response": text(size / 2)}}},
		}
		b, _ := json.Marshal(msgs)
		out[i] = string(b)
	}
	return out
}

// noKeyword removes the one keyword of the benchmark text ("token" in "tokens"): the values
// then hold nothing that triggers a rule, the path where only the prefilter and the walk run.
func noKeyword(vals []string) []string {
	for i := range vals {
		vals[i] = strings.ReplaceAll(vals[i], "tokens", "words")
	}
	return vals
}

func benchPlanted(i int) []string {
	return []string{
		fmt.Sprintf("user%d.name@example%d.com", i, i%7),
		[]string{"+44 20 7946 0958", "(415) 555-2671", "+49 30 901820", "020 7946 0018"}[i%4],
		[]string{"4111 1111 1111 1111", "5500005555555559", "3782 822463 10005", "6011000990139424"}[i%4],
		"sk-proj-" + strings.Repeat(fmt.Sprintf("A%dbC%dd", i%10, (i*3)%10), 6),
	}
}

// BenchmarkRedactValue is the redaction of one gen_ai.input.messages value per operation
// (RedactValue, as the processor calls it), so -benchmem gives bytes and allocations per value:
// clean values (nothing to redact; the common case) and values with four planted findings. The
// same run measures two baselines on the same bytes: "copy_*" copies each value into a buffer
// (memory speed) and "walk_*" only walks its JSON tokens (jsonkit, the floor of any JSON-aware
// redaction); no CleanCache (each value is scanned in full; BenchmarkRedactResendHistory measures
// the cache).
//
//	go test -run '^$' -bench RedactValue -benchmem ./internal/redact/
func BenchmarkRedactValue(b *testing.B) {
	r, err := New(Config{HashKey: []byte("bench-key")})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vals []string
	}{
		{"clean_4KB", benchMessages(16, 4_000, nil)},
		{"clean_64KB", benchMessages(4, 64_000, nil)},
		{"nokeyword_64KB", noKeyword(benchMessages(4, 64_000, nil))},
		{"planted_4KB", benchMessages(16, 4_000, benchPlanted)},
		{"planted_64KB", benchMessages(4, 64_000, benchPlanted)},
		{"copy_4KB", benchMessages(16, 4_000, nil)},
		{"copy_64KB", benchMessages(4, 64_000, nil)},
		{"walk_4KB", benchMessages(16, 4_000, nil)},
		{"walk_64KB", benchMessages(4, 64_000, nil)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, 128<<10)
			f := func(v string) int {
				_, fs, _ := r.RedactValue("gen_ai.input.messages", v)
				return len(fs)
			}
			switch {
			case strings.HasPrefix(tc.name, "copy_"):
				f = func(v string) int { buf = append(buf[:0], v...); return 4 }
			case strings.HasPrefix(tc.name, "walk_"):
				f = func(v string) int {
					sc := jsonkit.GetScannerString(v)
					for {
						if _, err := sc.Next(); err != nil {
							break
						}
					}
					jsonkit.PutScanner(sc)
					return 4
				}
			}
			total := 0
			for _, v := range tc.vals {
				total += len(v)
			}
			b.SetBytes(int64(total / len(tc.vals)))
			i := 0
			c0 := benchtest.CPUTime()
			for b.Loop() {
				if n := f(tc.vals[i%len(tc.vals)]); tc.name[0] == 'p' && n < 4 {
					b.Fatalf("%d findings", n)
				}
				i++
			}
			reportCPU(b, benchtest.CPUTime()-c0, i, total/len(tc.vals))
		})
	}
}

// BenchmarkJSONWalk compares, in one run, the jsonkit (jsontext) walk with the hand-written
// scanner it replaced on the redaction path: "scan" is the bare walk (validate, then visit every
// string token: legacyValidJSON plus the legacy quote loop, against one jsonkit.Scanner pass), and
// "redact" is the whole RedactJSON (prefilter included) against legacyRedactJSON.
//
//	go test -run '^$' -bench JSONWalk -benchmem ./internal/redact/
func BenchmarkJSONWalk(b *testing.B) {
	r, err := New(Config{HashKey: []byte("bench-key")})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vals []string
	}{
		{"clean_4KB", benchMessages(16, 4_000, nil)},
		{"clean_64KB", benchMessages(4, 64_000, nil)},
		{"planted_64KB", benchMessages(4, 64_000, benchPlanted)},
	} {
		total := 0
		for _, v := range tc.vals {
			total += len(v)
		}
		run := func(name string, f func(string)) {
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(total / len(tc.vals)))
				i := 0
				c0 := benchtest.CPUTime()
				for b.Loop() {
					f(tc.vals[i%len(tc.vals)])
					i++
				}
				reportCPU(b, benchtest.CPUTime()-c0, i, total/len(tc.vals))
			})
		}
		run("scan_legacy", func(s string) {
			if !legacyValidJSON(s) {
				b.Fatal("invalid")
			}
			sinkN += legacyStringTokens(s)
		})
		run("scan_jsonkit", func(s string) {
			sc := jsonkit.GetScannerString(s)
			for {
				if _, err := sc.Next(); err != nil {
					break
				}
			}
			jsonkit.PutScanner(sc)
		})
		run("redact_legacy", func(s string) { legacyRedactJSON(r, s) })
		run("redact_jsonkit", func(s string) { r.RedactJSON(s) })
	}
}

// reportCPU reports CPU microseconds per operation and MB per CPU second, over n operations of
// size bytes each that took cpu.
func reportCPU(b *testing.B, cpu time.Duration, n, size int) {
	if cpu <= 0 || n == 0 {
		return
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/op")
	b.ReportMetric(float64(size*n)/1e6/cpu.Seconds(), "cpu-MB/s")
}

// legacyStringTokens is the string-finding loop of the legacy walk without its redaction work.
func legacyStringTokens(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		i = j
		n++
	}
	return n
}

var sinkN int
