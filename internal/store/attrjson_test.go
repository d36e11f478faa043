// SPDX-License-Identifier: Apache-2.0

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store/storetest"
)

// trickyTraces holds the generated runs plus one span whose summary attributes and exception
// attributes take every value type and every character json.Marshal escapes.
func trickyTraces() ptrace.Traces {
	var runs []storetest.Run
	for i := 0; i < 6; i++ {
		runs = append(runs, storetest.Run{Seed: string(rune('a' + i)), Session: "conv-<&>", Service: "svc", Agent: "a\"b",
			Model: "gpt-4.1", Start: int64(i+1) * 1e12, LLMCalls: 3, ToolFail: i%2 == 0})
	}
	td := storetest.Traces(runs...)
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0)
	s := ss.Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1, 2, 3})
	s.SetSpanID(pcommon.SpanID{4, 5, 6})
	s.SetName("tricky")
	a := s.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "m<ódel>\u2028\x01 \"q\" \\ & é \xff")
	a.PutInt("gen_ai.usage.input_tokens", -7)
	a.PutDouble("gen_ai.usage.output_tokens", 1.5e21)
	a.PutBool("gen_ai.usage.cached", true)
	a.PutEmpty("gen_ai.tool.name")
	a.PutEmptyBytes("gen_ai.tool.call.id").FromRaw([]byte{0, 1, 2})
	arr := a.PutEmptySlice("gen_ai.response.finish_reasons")
	arr.AppendEmpty().SetStr("stop")
	arr.AppendEmpty().SetInt(3)
	m := a.PutEmptyMap("gen_ai.usage.details")
	m.PutStr("z", "1")
	m.PutDouble("a", 0.1)
	a.PutStr("gen_ai.prompt", "never kept")
	ev := s.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "Boom<>")
	ev.Attributes().PutStr("exception.message", strings.Repeat("é", MaxEventValueBytes))
	ev.Attributes().PutStr("exception.detail", strings.Repeat("x&", MaxEventValueBytes))
	ev.Attributes().PutStr("exception.stacktrace", "dropped")
	ev.Attributes().PutDouble("exception.ratio", 0.30000000000000004)
	// a NaN makes the legacy map unmarshalable: the whole object is {}
	nan := ss.Spans().AppendEmpty()
	nan.SetTraceID(pcommon.TraceID{1, 2, 3})
	nan.SetSpanID(pcommon.SpanID{7})
	nan.Attributes().PutDouble("gen_ai.usage.input_tokens", math.NaN())
	nan.Attributes().PutStr("gen_ai.system", "openai")
	return td
}

// TestSummarizeMatchesLegacy: the summaries and key events Summarize builds are those of the
// map-and-json.Marshal encoding byte for byte (stored attribute texts and event ids depend on it).
func TestSummarizeMatchesLegacy(t *testing.T) {
	td := trickyTraces()
	spans, events := Summarize(td, nil, nil)
	wantSpans, wantEvents := summarizeLegacy(td, nil, nil)
	require.Equal(t, wantSpans, spans)
	require.Equal(t, wantEvents, events)
	require.NotEmpty(t, events)
	var tricky *SpanSummary
	for i := range spans {
		if spans[i].Name == "tricky" {
			tricky = &spans[i]
		}
	}
	require.NotNil(t, tricky)
	require.Contains(t, tricky.Attributes, `\u003c`, "HTML characters escaped as json.Marshal does")
	require.NotContains(t, tricky.Attributes, "never kept")
}

// TestAlertEventsMatchLegacy: alert key events carry the same attribute text as the map encoding.
func TestAlertEventsMatchLegacy(t *testing.T) {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(AlertEventName)
	lr.Attributes().PutStr("runagain.alert.rule", "loop<&>")
	lr.Attributes().PutInt("runagain.alert.count", 3)
	lr.Attributes().PutDouble("runagain.alert.cost", 0.25)
	lr.Attributes().PutStr("payload_ref", "x")
	lr.Attributes().PutStr("long", strings.Repeat("y", 2*MaxEventValueBytes))
	ev := AlertEvents(ld, nil)
	require.Len(t, ev, 1)
	want := map[string]any{}
	lr.Attributes().Range(func(k string, v pcommon.Value) bool {
		if !strings.HasSuffix(k, "_ref") {
			want[k] = bounded(v.AsRaw())
		}
		return true
	})
	require.Equal(t, mustJSON(want), ev[0].Attributes)
}

// TestPartialsBatchIDUnchanged: the batch id is the SHA-256 of the lines fmt wrote before
// (a retried batch must keep the id a previous build gave it: the cold tier dedups on it).
func TestPartialsBatchIDUnchanged(t *testing.T) {
	td := trickyTraces()
	ps := Partials(td, plog.Logs{}, nil, 1, nil)
	require.NotEmpty(t, ps)
	h := sha256.New()
	eachSpan(td, func(_ pcommon.Resource, s ptrace.Span) {
		if !s.TraceID().IsEmpty() && !s.SpanID().IsEmpty() {
			fmt.Fprintf(h, "s%s%s\n", s.TraceID().String(), s.SpanID())
		}
	})
	require.Equal(t, hex.EncodeToString(h.Sum(nil)), ps[0].BatchID)
}

// TestAttrJSONRepeatedAndManyKeys: a key added twice (an OTLP map decoded with a repeated key)
// keeps its last value, and an object of thousands of keys (an event's attributes are not
// filtered) is sorted as json.Marshal sorts the map.
func TestAttrJSONRepeatedAndManyKeys(t *testing.T) {
	var aj attrJSON
	want := map[string]any{}
	for i := 3000; i > 0; i-- {
		k := fmt.Sprintf("k%d", i%1000)
		v := pcommon.NewValueInt(int64(i))
		aj.add(k, v)
		want[k] = v.AsRaw()
	}
	wantText, err := json.Marshal(want)
	require.NoError(t, err)
	got, _ := aj.text(nil, false)
	require.Equal(t, string(wantText), got)
}
