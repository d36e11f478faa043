// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/codes"
)

// SpanID is span k's id in the traces this package builds: 0x5a, then k big-endian in 7 bytes.
func SpanID(k int) pcommon.SpanID {
	var id pcommon.SpanID
	id[0] = 0x5a
	for b := 0; b < 7; b++ {
		id[7-b] = byte(uint64(k) >> (8 * b))
	}
	return id
}

// AppendSpan appends sp to spans as span k (SpanID) of trace under parent (empty: a root): its
// name, kind, times, attributes, status and, for a failed call, an exception event.
func AppendSpan(spans ptrace.SpanSlice, trace pcommon.TraceID, k int, parent pcommon.SpanID, sp *SpanSpec) ptrace.Span {
	s := spans.AppendEmpty()
	s.SetTraceID(trace)
	s.SetSpanID(SpanID(k))
	if !parent.IsEmpty() {
		s.SetParentSpanID(parent)
	}
	s.SetName(sp.Name)
	s.SetKind(ptrace.SpanKind(sp.Kind)) // the OTel API's and OTLP's kinds share their numbers
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End))
	PutAttrs(s.Attributes(), sp.Attrs)
	switch sp.Status {
	case codes.Error:
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(sp.StatusMessage)
	case codes.Ok:
		s.Status().SetCode(ptrace.StatusCodeOk)
	}
	if sp.ExceptionType != "" {
		ev := s.Events().AppendEmpty()
		ev.SetName("exception")
		ev.SetTimestamp(pcommon.NewTimestampFromTime(sp.End))
		ev.Attributes().PutStr("exception.type", sp.ExceptionType)
		ev.Attributes().PutStr("exception.message", sp.ExceptionMessage)
	}
	return s
}

// LongRun is one trace of n spans for benchmarks of large runs (bench/cmd/uibench, the diff's
// BenchmarkLargeRuns): an agent span "invoke_agent long" over the turns of long sessions (50
// turns each, no resent history, no planted loops or length stops; their root spans under it),
// shifted to follow each other from start, filled up to n with 1 ms tool calls. msgBytes sets
// the messages' size. Resource service.name loadgen-agent. It returns the traces and the
// attribute bytes they hold.
func LongRun(trace pcommon.TraceID, n, msgBytes int, start time.Time) (ptrace.Traces, int64) {
	cfg := DefaultConfig()
	cfg.MessageBytes = msgBytes
	cfg.ResendHistory = false
	cfg.Turns = 50
	cfg.LoopRate, cfg.LengthRate = 0, 0
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "loadgen-agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	root := spans.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(SpanID(0))
	root.SetName("invoke_agent long")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "long")
	k, at := 1, start
	for specs := range Turns(cfg, n/(cfg.Turns*cfg.SpansPerTurn())+1, start) {
		if k+len(specs) > n {
			break
		}
		shift, base := at.Sub(specs[0].Start), k
		for j := range specs {
			sp := specs[j]
			sp.Start, sp.End = sp.Start.Add(shift), sp.End.Add(shift)
			parent := root.SpanID()
			if sp.Parent >= 0 {
				parent = SpanID(base + sp.Parent)
			}
			AppendSpan(spans, trace, k, parent, &sp)
			k++
		}
		at = at.Add(specs[0].End.Sub(specs[0].Start) + time.Millisecond)
	}
	for ; k < n; k++ {
		s := spans.AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(SpanID(k))
		s.SetParentSpanID(root.SpanID())
		s.SetName("execute_tool noop")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Millisecond)))
		s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		s.Attributes().PutStr("gen_ai.tool.name", "noop")
		at = at.Add(time.Millisecond)
	}
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(at))
	var bytes int64
	for i := 0; i < spans.Len(); i++ {
		spans.At(i).Attributes().Range(func(_ string, v pcommon.Value) bool {
			bytes += int64(len(v.AsString()))
			return true
		})
	}
	return td, bytes
}
