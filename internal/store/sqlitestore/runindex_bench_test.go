// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkHotWriteShortRuns writes batches of 500 two-span runs (an agent span and one LLM call)
// to a hot file: the case where the run index costs the writer most, one index row per two spans.
// Its share of the writer's CPU is runIndex.recompute in a CPU profile:
//
//	go test -run '^$' -bench HotWriteShortRuns -benchtime 60x -cpuprofile cpu.out ./internal/store/sqlitestore/
//	go tool pprof -top -cum cpu.out | grep -E 'WriteTraces|recompute'
//
// Sub-benchmarks: apply (incremental index maintenance) and recompute (the same-run baseline).
func BenchmarkHotWriteShortRuns(b *testing.B) {
	for _, mode := range []string{"apply", "recompute"} {
		b.Run(mode, func(b *testing.B) { benchShortRuns(b, mode == "recompute") })
	}
}

func benchShortRuns(b *testing.B, recompute bool) {
	ctx := context.Background()
	db, err := Open(filepath.Join(b.TempDir(), "hot.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.recomputeIndex = recompute
	n := 0
	b.ReportAllocs()
	for it := 0; it < b.N; it++ {
		td := ptrace.NewTraces()
		for i := 0; i < 500; i++ {
			ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
			tid := pcommon.TraceID{1, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
			root := ss.Spans().AppendEmpty()
			root.SetTraceID(tid)
			root.SetSpanID(pcommon.SpanID{1, 2})
			root.SetStartTimestamp(pcommon.Timestamp(n))
			root.Attributes().PutStr("gen_ai.conversation.id", fmt.Sprint("c", n/4))
			c := ss.Spans().AppendEmpty()
			c.SetTraceID(tid)
			c.SetSpanID(pcommon.SpanID{1, 3})
			c.SetParentSpanID(root.SpanID())
			c.Attributes().PutStr("gen_ai.request.model", "gpt-4.1")
			c.Attributes().PutInt("gen_ai.usage.input_tokens", 100)
			n++
		}
		if _, err := db.WriteTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkHotWriteGrowingRuns writes batches of 400 spans that add 8 spans to each of 50 long
// runs (a long agent session's runs growing batch after batch, children before their parents),
// with the run index maintained incrementally (apply) and, as the same-run baseline, recomputed
// from every span row of each touched run per batch (recompute, before schema version 5). The
// cost of recompute grows with the runs; the ratio of the two is the result:
//
//	go test -run '^$' -bench HotWriteGrowingRuns -benchtime 40x ./internal/store/sqlitestore/
func BenchmarkHotWriteGrowingRuns(b *testing.B) {
	for _, mode := range []string{"apply", "recompute"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(filepath.Join(b.TempDir(), "hot.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.recomputeIndex = mode == "recompute"
			b.ReportAllocs()
			for it := 0; it < b.N; it++ {
				td := ptrace.NewTraces()
				for r := 0; r < 50; r++ {
					ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
					tid := pcommon.TraceID{2, byte(r)}
					for k := 0; k < 8; k++ {
						n := it*8 + k + 1
						s := ss.Spans().AppendEmpty()
						s.SetTraceID(tid)
						s.SetSpanID(pcommon.SpanID{3, byte(n >> 16), byte(n >> 8), byte(n)})
						s.SetParentSpanID(pcommon.SpanID{3, byte((n + 8) >> 16), byte((n + 8) >> 8), byte(n + 8)}) // stored next batch
						s.SetStartTimestamp(pcommon.Timestamp(n))
						s.Attributes().PutStr("gen_ai.conversation.id", fmt.Sprint("c", r))
						s.Attributes().PutStr("gen_ai.request.model", "gpt-4.1")
						s.Attributes().PutInt("gen_ai.usage.input_tokens", 100)
					}
				}
				if _, err := db.WriteTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*400)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
