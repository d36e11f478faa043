// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchValue returns a value of exactly size bytes: prose-like text (kind "text", stored as one
// object) or a GenAI message array of ~2 KiB messages (kind "messages", split per message).
func benchValue(kind string, size int) []byte {
	c := newConversation(7)
	if kind == "text" {
		return []byte(c.text(size, size)[:size])
	}
	var msgs []map[string]any
	for {
		msgs = append(msgs, textMsg("user", c.text(2000, 2000)))
		b, _ := json.Marshal(msgs)
		if len(b) >= size {
			// Trim the last message's text so the array is exactly size bytes.
			over := len(b) - size
			last := msgs[len(msgs)-1]["parts"].([]any)[0].(map[string]any)
			s := last["content"].(string)
			last["content"] = s[:len(s)-over]
			b, _ = json.Marshal(msgs)
			return b
		}
	}
}

// stamp makes v unique for iteration i (content addressing would otherwise make every iteration
// after the first a dedup hit) by overwriting digits inside its first text.
func stamp(v []byte, off, i int) {
	s := strconv.Itoa(i)
	for j := 0; j < 12; j++ {
		v[off+j] = 'a'
	}
	copy(v[off:], s)
}

// BenchmarkOffload measures MB/s of values through the processor (span in, span with a _ref out,
// object stored) for 4 KiB, 64 KiB and 1 MiB values on mem:// and file:// (one object per
// digest, the layout before packs) and on file:// in packs ("packs": appended to a staged pack,
// one fsync and one index transaction per ConsumeTraces, uploaded per 16 MiB), and in the same run the
// MB/s of only SHA-256 hashing the same bytes (the least any content-addressed store must do).
// Reported: offload_MB/s (the processor), sha256_MB/s, and ratio_vs_sha256 (their quotient),
// measured interleaved in the same iterations.
func BenchmarkOffload(b *testing.B) {
	for _, store := range []string{"mem", "file", "packs"} {
		for _, kind := range []string{"text", "messages"} {
			for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
				name := fmt.Sprintf("%s/%s/%dKiB", store, kind, size>>10)
				b.Run(name, func(b *testing.B) {
					// A fresh bucket per run: mem:// buckets live as long as the process, and
					// objects left by a previous -count run would turn writes into dedup hits.
					url := fmt.Sprintf("mem://bench-%d", time.Now().UnixNano())
					dir := ""
					switch store {
					case "file":
						url = "file://" + b.TempDir() + "?metadata=skip"
					case "packs":
						url, dir = "file://"+b.TempDir()+"?metadata=skip", b.TempDir()
					}
					benchOffload(b, url, dir, kind, size, "default")
				})
			}
		}
	}
	// The same text values on mem:// with compression_level: fastest.
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("mem/text-fastest/%dKiB", size>>10), func(b *testing.B) {
			benchOffload(b, fmt.Sprintf("mem://bench-%d", time.Now().UnixNano()), "", "text", size, "fastest")
		})
	}
}

func benchOffload(b *testing.B, url, dir, kind string, size int, level string) {
	cfg := testConfig(url)
	cfg.payloads.Dir = dir
	cfg.payloads.CompressionLevel = level
	h := newHarness(b, cfg)
	ctx := context.Background()
	v := benchValue(kind, size)
	key := "gen_ai.tool.call.result"
	off := 0
	if kind == "messages" {
		key = "gen_ai.input.messages"
		off = len(`[{"parts":[{"content":"`)
	}
	// Warm-up, untimed: for "messages" this stores the shared messages once, so that the timed
	// iterations measure the steady state of a conversation (one new message per value).
	warm := ptrace.NewTraces()
	warm.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutStr(key, string(v))
	if err := h.traces.ConsumeTraces(ctx, warm); err != nil {
		b.Fatal(err)
	}
	h.tsink.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	// Interleaved: each iteration hashes the value, then sends it through the processor, so both
	// see the same machine load.
	var procTime, hashTime time.Duration
	var sink byte
	for i := 0; i < b.N; i++ {
		stamp(v, off, i)
		t0 := time.Now()
		sum := sha256.Sum256(v)
		t1 := time.Now()
		td := ptrace.NewTraces()
		td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutStr(key, string(v))
		if err := h.traces.ConsumeTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		h.tsink.Reset()
		sink ^= sum[0]
		hashTime += t1.Sub(t0)
		procTime += t2.Sub(t1)
	}
	b.StopTimer()
	_ = sink
	if got := h.metric("values_offloaded"); got != int64(b.N)+1 {
		b.Fatalf("%d values offloaded, want %d", got, b.N+1)
	}
	mb := float64(b.N) * float64(size) / 1e6
	procMBs := mb / procTime.Seconds()
	hashMBs := mb / hashTime.Seconds()
	b.ReportMetric(procMBs, "offload_MB/s")
	b.ReportMetric(hashMBs, "sha256_MB/s")
	b.ReportMetric(procMBs/hashMBs, "ratio_vs_sha256")
}

// BenchmarkOffloadBatches measures the processor on agent traffic shaped like make bench's: 20
// concurrent conversations, one LLM-call span each per ConsumeTraces (20 spans per call), every
// call resending its history, on file:// as single objects ("file": a temporary file, a rename
// and, for large values, an existence check per object; no fsync) and in packs ("packs": appended
// to the staged pack, one fsync and one index transaction per call). Reported per span: ns/span
// and allocations (b.N counts calls).
func BenchmarkOffloadBatches(b *testing.B) {
	for _, layout := range []string{"file", "packs"} {
		b.Run(layout, func(b *testing.B) {
			cfg := testConfig("file://" + b.TempDir() + "?metadata=skip")
			if layout == "packs" {
				cfg.payloads.Dir = b.TempDir()
			}
			h := newHarness(b, cfg)
			ctx := context.Background()
			sys, tools := fixedPrompt()
			convs := make([]*conversation, 20)
			for i := range convs {
				convs[i] = newConversation(uint64(5000 + i))
			}
			// The traffic, generated before the clock starts (turns restart after 60 so that
			// values keep their realistic size).
			const turns = 60
			batches := make([]ptrace.Traces, 0, turns)
			for turn := 0; turn < turns; turn++ {
				td := ptrace.NewTraces()
				ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
				for _, c := range convs {
					s := ss.Spans().AppendEmpty()
					for k, v := range c.turn(turn, sys, tools) {
						s.Attributes().PutStr(k, v)
					}
				}
				batches = append(batches, td)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				td := ptrace.NewTraces()
				batches[i%turns].CopyTo(td)
				if err := h.traces.ConsumeTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
				h.tsink.Reset()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(convs)), "ns/span")
		})
	}
}
