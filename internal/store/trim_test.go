// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// payloadRuns is generated runs (one failing tool call each third run) whose LLM spans also
// carry an 8 KB input message, a payload reference and a stack trace on the exception.
func payloadRuns(n int) ptrace.Traces {
	var runs []storetest.Run
	for i := 0; i < n; i++ {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("trim-%d", i), Session: fmt.Sprintf("conv-%d", i%3), Service: "svc",
			Agent: "a", Model: "gpt-4.1", Start: t0, LLMCalls: 3, ToolFail: i%3 == 0})
	}
	td := storetest.Traces(runs...)
	big := strings.Repeat("the weather in Lisbon is sunny ", 260)
	eachTestSpan(td, func(s ptrace.Span) {
		s.Attributes().PutStr("gen_ai.output.messages", big)
		s.Attributes().PutStr("gen_ai.input.messages_ref", "file:///data/blobs/sha256/"+strings.Repeat("ab", 32)+".zst")
		s.Links().AppendEmpty().SetTraceID(s.TraceID())
		for i := 0; i < s.Events().Len(); i++ {
			s.Events().At(i).Attributes().PutStr("exception.stacktrace", big)
		}
		s.Events().AppendEmpty().SetName("gen_ai.choice")
	})
	return td
}

func eachTestSpan(td ptrace.Traces, f func(ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				f(sss.At(j).Spans().At(k))
			}
		}
	}
}

func assertSameSummaries(t *testing.T, td ptrace.Traces, keys []string) ptrace.Traces {
	t.Helper()
	before := ptrace.NewTraces()
	td.CopyTo(before)
	trimmed := store.TrimTraces(td, keys)
	assert.Equal(t, before, td, "the request is not modified")
	wantSpans, wantEvents := store.Summarize(td, keys, nil)
	gotSpans, gotEvents := store.Summarize(trimmed, keys, nil)
	assert.Equal(t, wantSpans, gotSpans, "warm span summaries")
	assert.Equal(t, wantEvents, gotEvents, "warm key events")
	assert.Equal(t, store.Partials(td, plog.Logs{}, keys, 1, nil), store.Partials(trimmed, plog.Logs{}, keys, 1, nil), "cold partials")
	return trimmed
}

// TestTrimTracesKeepsWhatSummariesRead: the warm and cold tiers compute the same records from
// the trimmed spans as from the whole request, and the trimmed request is a fraction of it.
func TestTrimTracesKeepsWhatSummariesRead(t *testing.T) {
	td := payloadRuns(9)
	trimmed := assertSameSummaries(t, td, nil)
	var m ptrace.ProtoMarshaler
	whole, small := m.TracesSize(td), m.TracesSize(trimmed)
	t.Logf("whole %d bytes, trimmed %d bytes (%d spans)", whole, small, td.SpanCount())
	assert.Equal(t, td.SpanCount(), trimmed.SpanCount())
	assert.Less(t, small*10, whole, "payloads, references, stack traces and links are not kept")
	eachTestSpan(trimmed, func(s ptrace.Span) {
		_, ok := s.Attributes().Get("gen_ai.input.messages_ref")
		assert.False(t, ok)
		assert.Zero(t, s.Links().Len())
	})

	// a session key of the configuration, long as it may be, is kept
	long := strings.Repeat("s", 1000)
	eachTestSpan(td, func(s ptrace.Span) { s.Attributes().PutStr("thread.id", long) })
	assertSameSummaries(t, td, []string{"thread.id"})
}

// TestTrimTracesCorpusAttributes: every attribute set found in the corpus (OpenLLMetry,
// OpenInference, Langfuse, any-agent ... spans), as the attributes of a span, summarizes the
// same trimmed as whole.
func TestTrimTracesCorpusAttributes(t *testing.T) {
	files := corpus.Walk(t, ".", func(p string) bool { return strings.HasSuffix(strings.ToLower(p), ".json") })
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		collectAttrs(v, 0, func(attrs map[string]any) {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(storetest.TraceID(filepath.Base(f)))
			s.SetSpanID(storetest.SpanID(f, ss.Spans().Len()))
			s.SetStartTimestamp(pcommon.Timestamp(t0))
			_ = s.Attributes().FromRaw(attrs)
		})
	}
	t.Logf("%d attribute sets from %d files", ss.Spans().Len(), len(files))
	require.Positive(t, ss.Spans().Len())
	assertSameSummaries(t, td, nil)
}

// collectAttrs calls f with every object found under an "attributes" key of v.
func collectAttrs(v any, depth int, f func(map[string]any)) {
	if depth > 64 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if m, ok := e.(map[string]any); ok && k == "attributes" && len(m) > 0 {
				f(m)
			}
			collectAttrs(e, depth+1, f)
		}
	case []any:
		for _, e := range x {
			collectAttrs(e, depth+1, f)
		}
	}
}

// TestTrimLogsKeepsAlertsOnly: the alerts survive whole (warm key events and cold partials
// equal), every other log record is dropped.
func TestTrimLogsKeepsAlertsOnly(t *testing.T) {
	ld := storetest.Alert(runA, "loop detected")
	other := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	other.Body().SetStr(strings.Repeat("an application log line ", 100))
	plain := ld.ResourceLogs().AppendEmpty()
	plain.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("no alert here")
	trimmed := store.TrimLogs(ld, nil)
	assert.Equal(t, 1, trimmed.LogRecordCount())
	assert.Equal(t, 1, trimmed.ResourceLogs().Len(), "a resource without alerts is left out")
	assert.Equal(t, store.AlertEvents(ld, nil), store.AlertEvents(trimmed, nil))
	td := storetest.Traces(runA)
	assert.Equal(t, store.Partials(td, ld, nil, 1, nil), store.Partials(td, trimmed, nil, 1, nil))
	assert.Zero(t, store.TrimLogs(plog.NewLogs(), nil).LogRecordCount())
}
