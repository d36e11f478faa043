// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/codes"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// loadgenRun is one trace of n spans shaped as uibench's long runs (bench/cmd/uibench): an
// agent span over the turns of long loadgen sessions (50 turns, no resent history), filled up
// to n with short tool calls.
func loadgenRun(tid byte, n int) *store.Run {
	cfg := loadgen.DefaultConfig()
	cfg.MessageBytes = 512
	cfg.ResendHistory = false
	cfg.Turns = 50
	cfg.LoopRate, cfg.LengthRate = 0, 0
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	trace := pcommon.TraceID{0x75, tid}
	sid := func(i int) pcommon.SpanID { return pcommon.SpanID{0x5a, byte(i >> 16), byte(i >> 8), byte(i)} }
	root := spans.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(sid(0))
	root.SetName("invoke_agent long")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "long")
	k, at := 1, t0
	for specs := range loadgen.Turns(cfg, n/(cfg.Turns*cfg.SpansPerTurn())+1, t0) {
		if k+len(specs) > n {
			break
		}
		shift, base := at.Sub(specs[0].Start), k
		for j := range specs {
			sp := specs[j]
			s := spans.AppendEmpty()
			s.SetTraceID(trace)
			s.SetSpanID(sid(k))
			parent := root.SpanID()
			if sp.Parent >= 0 {
				parent = sid(base + sp.Parent)
			}
			s.SetParentSpanID(parent)
			s.SetName(sp.Name)
			s.SetKind(ptrace.SpanKind(sp.Kind))
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start.Add(shift)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End.Add(shift)))
			loadgen.PutAttrs(s.Attributes(), sp.Attrs)
			switch sp.Status {
			case codes.Error:
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage(sp.StatusMessage)
			case codes.Ok:
				s.Status().SetCode(ptrace.StatusCodeOk)
			}
			k++
		}
		at = at.Add(specs[0].End.Sub(specs[0].Start) + time.Millisecond)
	}
	for ; k < n; k++ {
		s := spans.AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(sid(k))
		s.SetParentSpanID(root.SpanID())
		s.SetName("execute_tool noop")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Millisecond)))
		s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		s.Attributes().PutStr("gen_ai.tool.name", "noop")
		at = at.Add(time.Millisecond)
	}
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(at))
	return &store.Run{TraceID: trace.String(), Traces: td, Logs: plog.NewLogs(), Tier: "hot"}
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
