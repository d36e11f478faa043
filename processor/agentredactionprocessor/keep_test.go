// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// withRedactions returns a copy of td in which every string and bytes value (attributes at
// any depth, span and event names, status messages) has had repl applied: what the output
// must be when redaction replaced exactly the findings and kept everything else byte for byte.
func withRedactions(td ptrace.Traces, repl *strings.Replacer) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	eachSpanMap(out, func(m pcommon.Map) {
		m.Range(func(_ string, v pcommon.Value) bool {
			replaceValue(v, repl)
			return true
		})
	})
	rss := out.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				sp.SetName(repl.Replace(sp.Name()))
				sp.Status().SetMessage(repl.Replace(sp.Status().Message()))
				for e := 0; e < sp.Events().Len(); e++ {
					sp.Events().At(e).SetName(repl.Replace(sp.Events().At(e).Name()))
				}
			}
		}
	}
	return out
}

// withoutMarks returns a copy of td without the attributes the processor adds (CountAttribute,
// ChangedAttribute), which tests check apart.
func withoutMarks(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	eachSpanMap(out, func(m pcommon.Map) {
		m.Remove(CountAttribute)
		m.Remove(ChangedAttribute)
	})
	return out
}

// eachSpanMap calls fn with every attribute map of td: resources, spans, events and links.
func eachSpanMap(td ptrace.Traces, fn func(pcommon.Map)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		fn(rss.At(i).Resource().Attributes())
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				fn(sp.Attributes())
				for e := 0; e < sp.Events().Len(); e++ {
					fn(sp.Events().At(e).Attributes())
				}
				for l := 0; l < sp.Links().Len(); l++ {
					fn(sp.Links().At(l).Attributes())
				}
			}
		}
	}
}

func replaceValue(v pcommon.Value, repl *strings.Replacer) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		v.SetStr(repl.Replace(v.Str()))
	case pcommon.ValueTypeBytes:
		v.Bytes().FromRaw([]byte(repl.Replace(string(v.Bytes().AsRaw()))))
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			replaceValue(v.Slice().At(i), repl)
		}
	case pcommon.ValueTypeMap:
		v.Map().Range(func(_ string, e pcommon.Value) bool {
			replaceValue(e, repl)
			return true
		})
	}
}
