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
func BenchmarkHotWriteShortRuns(b *testing.B) {
	ctx := context.Background()
	db, err := Open(filepath.Join(b.TempDir(), "hot.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
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
