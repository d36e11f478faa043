// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// loadgenRun is one trace of n spans shaped as uibench's long runs (loadgen.LongRun).
func loadgenRun(tid byte, n int) *store.Run {
	td, _ := loadgen.LongRun(pcommon.TraceID{0x75, tid}, n, 512, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	return &store.Run{TraceID: pcommon.TraceID{0x75, tid}.String(), Traces: td, Logs: plog.NewLogs(), Tier: "hot"}
}

// BenchmarkLargeRuns diffs two 10,000-span runs shaped as uibench's (a run with itself, and with a
// copy whose one tool result differs), the views built once: the cost of diff.Runs alone.
func BenchmarkLargeRuns(b *testing.B) {
	ctx := context.Background()
	ra, rb := loadgenRun(1, 10000), loadgenRun(1, 10000)
	var tools []ptrace.Span
	store.EachSpan(rb.Traces, func(s ptrace.Span) {
		if v, ok := s.Attributes().Get("gen_ai.operation.name"); ok && v.Str() == "execute_tool" {
			tools = append(tools, s)
		}
	})
	tools[len(tools)/4].Attributes().PutStr("gen_ai.tool.call.result", `{"temperature":18,"sky":"rain"}`)
	va, err := runview.Build(ctx, ra, runview.Options{})
	if err != nil {
		b.Fatal(err)
	}
	vb, err := runview.Build(ctx, rb, runview.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("same", func(b *testing.B) {
		for b.Loop() {
			r, err := Runs(va, va, Options{})
			if err != nil || !r.Identical {
				b.Fatal(err, r.First)
			}
		}
	})
	b.Run("one-tool", func(b *testing.B) {
		for b.Loop() {
			r, err := Runs(va, vb, Options{})
			if err != nil || r.Identical || r.First.Field != FieldToolResult {
				b.Fatal(err, r.First)
			}
		}
	})
}
