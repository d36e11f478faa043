// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

func sampleTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.37.0")
	rs.Resource().Attributes().PutStr("service.name", "weather-agent")
	rs.Resource().Attributes().PutInt("host.cpu", 4)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("openinference.instrumentation.openai_agents")
	ss.Scope().SetVersion("1.3.0")
	ss.Scope().Attributes().PutBool("scope.flag", true)

	root := ss.Spans().AppendEmpty()
	root.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	root.SetSpanID(pcommon.SpanID{1, 1, 1, 1, 1, 1, 1, 1})
	root.SetName("invoke_agent weather")
	root.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000))
	root.SetEndTimestamp(pcommon.Timestamp(1_700_000_002_000_000_000))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.conversation.id", "conv-42")

	llm := ss.Spans().AppendEmpty()
	llm.SetTraceID(root.TraceID())
	llm.SetSpanID(pcommon.SpanID{2, 2, 2, 2, 2, 2, 2, 2})
	llm.SetParentSpanID(root.SpanID())
	llm.SetName("chat gpt-4.1")
	llm.SetKind(ptrace.SpanKindClient)
	llm.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_500_000_000))
	llm.SetEndTimestamp(pcommon.Timestamp(1_700_000_001_500_000_000))
	llm.TraceState().FromRaw("vendor=x")
	llm.Status().SetCode(ptrace.StatusCodeError)
	llm.Status().SetMessage("rate limited")
	a := llm.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4.1")
	a.PutInt("gen_ai.usage.input_tokens", 55)
	a.PutInt("gen_ai.usage.output_tokens", 12)
	a.PutDouble("gen_ai.request.temperature", 0.7)
	a.PutStr("bad.utf8", string([]byte{0xff, 0xfe, 'o', 'k'}))
	a.PutEmptyBytes("raw").FromRaw([]byte{0, 1, 2})
	sl := a.PutEmptySlice("gen_ai.response.finish_reasons")
	sl.AppendEmpty().SetStr("stop")
	a.PutEmptyMap("nested").PutInt("depth", 2)
	ev := llm.Events().AppendEmpty()
	ev.SetName("gen_ai.choice")
	ev.SetTimestamp(pcommon.Timestamp(1_700_000_001_000_000_000))
	ev.Attributes().PutStr("message", "hello")
	ln := llm.Links().AppendEmpty()
	ln.SetTraceID(pcommon.TraceID{9})
	ln.SetSpanID(pcommon.SpanID{9})
	ln.Attributes().PutStr("link.kind", "retry-of")
	llm.SetDroppedAttributesCount(3)

	bad := ss.Spans().AppendEmpty() // empty trace id: rejected with a reason
	bad.SetName("no ids")
	return td
}

func TestWriteReadRoundTripAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	db, err := Open(path, Options{})
	require.NoError(t, err)
	td := sampleTraces()
	rejected, err := db.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.Len(t, rejected, 1)
	assert.ErrorIs(t, rejected[0], ErrInvalidSpan)
	assert.Contains(t, rejected[0].Error(), "no ids")
	// Writing the same batch again (an at-least-once retry) does not duplicate rows.
	_, err = db.WriteTraces(ctx, td)
	require.NoError(t, err)

	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	lr.SetSpanID(pcommon.SpanID{2, 2, 2, 2, 2, 2, 2, 2})
	lr.SetEventName("runagain.alert")
	lr.Body().SetStr("loop")
	require.NoError(t, db.WriteLogs(ctx, ld))
	require.NoError(t, db.WriteLogs(ctx, ld))
	require.NoError(t, db.Close())

	r, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	runs, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	got := runs[0]
	assert.Equal(t, "0102030405060708090a0b0c0d0e0f10", got.TraceID)
	assert.Equal(t, "conv-42", got.SessionID)
	assert.EqualValues(t, 2, got.Spans)
	assert.EqualValues(t, 1, got.Errors)
	assert.EqualValues(t, 55, got.InputTokens)
	assert.EqualValues(t, 12, got.OutputTokens)
	assert.Equal(t, []string{"gpt-4.1"}, got.Models)
	assert.Equal(t, 2*time.Second, got.Duration())

	none, err := r.Runs(ctx, store.RunFilter{Since: time.Unix(1_800_000_000, 0)})
	require.NoError(t, err)
	assert.Empty(t, none)

	run, err := r.Run(ctx, got.TraceID)
	require.NoError(t, err)
	assert.Equal(t, 1, run.Logs.LogRecordCount())
	// Every span comes back complete: compare the OTLP encoding span by span.
	want := map[string][]byte{}
	each(td, func(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, s ptrace.Span) {
		if !s.TraceID().IsEmpty() {
			want[s.SpanID().String()] = single(t, rs, ss, s)
		}
	})
	n := 0
	each(run.Traces, func(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, s ptrace.Span) {
		n++
		assert.Equal(t, want[s.SpanID().String()], single(t, rs, ss, s), s.Name())
	})
	assert.Equal(t, len(want), n)

	_, err = r.Run(ctx, "ffffffffffffffffffffffffffffffff")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestOpenReadOnlyMissingFile(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.db"), Options{ReadOnly: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope.db")
}

func each(td ptrace.Traces, f func(ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				f(rs, ss, ss.Spans().At(k))
			}
		}
	}
}

func single(t *testing.T, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, s ptrace.Span) []byte {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(store.SpanTraces(rs, ss, s))
	require.NoError(t, err)
	return b
}

func TestReadOnlyOpenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warm.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	_, err := OpenWarm(path, Options{ReadOnly: true})
	require.ErrorContains(t, err, "schema version 0")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "a reader must not write the file header")
}
