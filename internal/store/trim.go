// SPDX-License-Identifier: Apache-2.0

package store

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// MaxTrimmedValueBytes is the largest attribute value (string or bytes, or an array or map in
// total) TrimTraces keeps when the key is not one the summaries name. Every value the summaries
// read is an identifier, a model or tool name, a count or an enum (gen_ai.*, OpenInference,
// Traceloop span kinds); payloads (messages, tool arguments and results, HTTP bodies) are far
// larger. 256 bytes keeps every short value a classifier might read and drops what costs bytes.
const MaxTrimmedValueBytes = 256

// TrimTraces returns a new Traces holding only what the warm and cold tiers read of td
// (Summarize, Partials): every span with its ids, name, kind, times and status; of its
// attributes the summary attributes (SummaryAttribute), the session keys and any other value of
// at most MaxTrimmedValueBytes; of its events only the "exception" events, without
// exception.stacktrace; no links. Payload references (`*_ref`) are dropped: the summaries never
// keep them. Resources and scopes keep their small attributes (service.name, session keys).
//
// Summarize(TrimTraces(td)) and Partials(TrimTraces(td)) equal Summarize(td) and Partials(td)
// (trim_test.go checks it on generated runs and on the corpus' attribute sets). The tiered
// exporter persists this, not the whole request, in the warm and cold tiers' queues.
// sessionKeys nil means genai.DefaultSessionKeys. td is not modified.
func TrimTraces(td ptrace.Traces, sessionKeys []string) ptrace.Traces {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	out := ptrace.NewTraces()
	rss := td.ResourceSpans()
	out.ResourceSpans().EnsureCapacity(rss.Len())
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		ors := out.ResourceSpans().AppendEmpty()
		trimAttrs(rs.Resource().Attributes(), ors.Resource().Attributes(), sessionKeys)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			oss := ors.ScopeSpans().AppendEmpty()
			oss.Scope().SetName(ss.Scope().Name())
			oss.Scope().SetVersion(ss.Scope().Version())
			spans := ss.Spans()
			oss.Spans().EnsureCapacity(spans.Len())
			for k := 0; k < spans.Len(); k++ {
				trimSpan(spans.At(k), oss.Spans().AppendEmpty(), sessionKeys)
			}
		}
	}
	return out
}

func trimSpan(s, o ptrace.Span, sessionKeys []string) {
	o.SetTraceID(s.TraceID())
	o.SetSpanID(s.SpanID())
	o.SetParentSpanID(s.ParentSpanID())
	o.SetName(s.Name())
	o.SetKind(s.Kind())
	o.SetStartTimestamp(s.StartTimestamp())
	o.SetEndTimestamp(s.EndTimestamp())
	s.Status().CopyTo(o.Status())
	trimAttrs(s.Attributes(), o.Attributes(), sessionKeys)
	evs := s.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if ev.Name() != "exception" {
			continue
		}
		oe := o.Events().AppendEmpty()
		oe.SetName(ev.Name())
		oe.SetTimestamp(ev.Timestamp())
		ev.Attributes().Range(func(k string, v pcommon.Value) bool {
			if k != "exception.stacktrace" && !strings.HasSuffix(k, genai.RefSuffix) {
				v.CopyTo(oe.Attributes().PutEmpty(k))
			}
			return true
		})
	}
}

// trimAttrs copies to dst the attributes of src the summaries may read.
func trimAttrs(src, dst pcommon.Map, sessionKeys []string) {
	dst.EnsureCapacity(src.Len())
	src.Range(func(k string, v pcommon.Value) bool {
		if strings.HasSuffix(k, genai.RefSuffix) {
			return true
		}
		if SummaryAttribute(k) || slices.Contains(sessionKeys, k) || valueSize(v, MaxTrimmedValueBytes) <= MaxTrimmedValueBytes {
			v.CopyTo(dst.PutEmpty(k))
		}
		return true
	})
}

// valueSize is the size in bytes of v's strings and bytes plus 8 per scalar, counted until it
// passes limit (then any value above limit is returned).
func valueSize(v pcommon.Value, limit int) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str())
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len()
	case pcommon.ValueTypeSlice:
		n := 0
		sl := v.Slice()
		for i := 0; i < sl.Len() && n <= limit; i++ {
			n += valueSize(sl.At(i), limit-n) + 1
		}
		return n
	case pcommon.ValueTypeMap:
		n := 0
		v.Map().Range(func(k string, e pcommon.Value) bool {
			n += len(k) + valueSize(e, limit-n)
			return n <= limit
		})
		return n
	default:
		return 8
	}
}

// TrimLogs returns a new Logs holding only the records the warm and cold tiers keep of ld: the
// agent_guard alerts (event name AlertEventName), whole, with their resource's small attributes
// (as TrimTraces). AlertEvents and Partials of the result equal those of ld. ld is not modified.
func TrimLogs(ld plog.Logs, sessionKeys []string) plog.Logs {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	out := plog.NewLogs()
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		var orl plog.ResourceLogs
		started := false
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			var osl plog.ScopeLogs
			scoped := false
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if lr.EventName() != AlertEventName {
					continue
				}
				if !started {
					orl = out.ResourceLogs().AppendEmpty()
					trimAttrs(rl.Resource().Attributes(), orl.Resource().Attributes(), sessionKeys)
					started = true
				}
				if !scoped {
					osl = orl.ScopeLogs().AppendEmpty()
					sl.Scope().CopyTo(osl.Scope())
					scoped = true
				}
				lr.CopyTo(osl.LogRecords().AppendEmpty())
			}
		}
	}
	return out
}

// HasAlerts reports whether ld holds a record the warm and cold tiers keep (event name
// AlertEventName), without copying anything.
func HasAlerts(ld plog.Logs) bool {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				if lrs.At(k).EventName() == AlertEventName {
					return true
				}
			}
		}
	}
	return false
}
