// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

var runB = storetest.Run{Seed: "b", Session: "conv-1", Service: "svc", Agent: "weather", Model: "claude-sonnet-4", Start: t0 + 5e9, LLMCalls: 1}
var runC = storetest.Run{Seed: "c", Service: "svc2", Model: "gpt-4.1", Start: t0 + 9e9, LLMCalls: 3, ToolFail: true}

func TestRecordsRoundTrip(t *testing.T) {
	spans, events := store.Summarize(storetest.Traces(runA, runB, runC), nil, nil)
	events = append(events, store.AlertEvents(storetest.Alert(runB, "loop detected"), nil)...)
	in := store.Records{Spans: spans, Events: events,
		Partials: store.Partials(storetest.Traces(runA, runC), storetest.Alert(runA, "x"), nil, t0, nil)}
	require.NotEmpty(t, in.Partials)
	enc, err := store.MarshalRecords(in)
	require.NoError(t, err)
	assert.True(t, store.IsRecords(enc))
	out, err := store.UnmarshalRecords(enc)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	assert.Equal(t, runA.Spans()+runB.Spans()+runC.Spans()+len(events)+runA.Spans()+runC.Spans()+1, out.Items())

	encEmpty, err := store.MarshalRecords(store.Records{})
	require.NoError(t, err)
	empty, err := store.UnmarshalRecords(encEmpty)
	require.NoError(t, err)
	assert.True(t, empty.Empty())

	// Every truncation of the body is refused, never decoded into wrong records.
	for _, cut := range []int{0, 3, len(enc) / 2, len(enc) - 1} {
		_, err := store.UnmarshalRecords(enc[:cut])
		assert.Error(t, err, "cut at %d", cut)
	}
	_, err = store.UnmarshalRecords(append([]byte("RAR1"), []byte("not zstd")...))
	assert.Error(t, err)
}

// TestRecordsRefuseHugeFrame: a queue entry whose zstd frame header claims more than the decoder
// cap (a corrupt entry) is refused before anything that size is allocated.
func TestRecordsRefuseHugeFrame(t *testing.T) {
	// RFC 8878: magic, frame header descriptor 0xA0 (single segment, 4-byte content size), the
	// content size (200 MiB), then one last RLE block of 16 bytes of 'x'.
	enc := append([]byte("RAR1"), 0x28, 0xb5, 0x2f, 0xfd, 0xa0)
	enc = binary.LittleEndian.AppendUint32(enc, 200<<20)
	enc = append(enc, byte(1|1<<1|16<<3), 0, 0, 'x')
	_, err := store.UnmarshalRecords(enc)
	require.Error(t, err)
	assert.ErrorIs(t, err, zstd.ErrDecoderSizeExceeded)
}

func TestRecordsSplitKeepsOrderAndBound(t *testing.T) {
	spans, events := store.Summarize(storetest.Traces(runA, runB, runC), nil, nil)
	r := store.Records{Spans: spans, Events: events}
	parts := r.Split(4, false)
	require.Greater(t, len(parts), 2)
	var back store.Records
	for _, p := range parts {
		assert.LessOrEqual(t, p.Items(), 4)
		back.Append(p)
	}
	assert.Equal(t, r, back)
	assert.Len(t, r.Split(0, false), 1)
	assert.Len(t, r.Split(r.Items(), false), 1)
	limit := r.Bytes() / 3
	byBytes := r.Split(limit, true)
	require.GreaterOrEqual(t, len(byBytes), 3)
	back = store.Records{}
	for _, p := range byBytes {
		assert.LessOrEqual(t, p.Bytes(), limit)
		back.Append(p)
	}
	assert.Equal(t, r, back)

	// A partial stands for many spans and cannot be cut: it goes whole into a part of its own.
	ps := store.Records{Partials: store.Partials(storetest.Traces(runA, runC), storetest.Alert(runA, "x"), nil, t0, nil)}
	pparts := ps.Split(1, false)
	assert.Len(t, pparts, len(ps.Partials))
}

// TestBatchOfNamesTheSetOfBatches: partials of one batch are named by it; partials of several
// (a sending queue merged their requests) by the id of the set, whatever its order or repetition.
func TestBatchOfNamesTheSetOfBatches(t *testing.T) {
	one := store.Partials(storetest.Traces(runA), storetest.Alert(runA, "x"), nil, t0, nil)
	two := store.Partials(storetest.Traces(runB, runC), storetest.Alert(runB, "y"), nil, t0+1, nil)
	id, several := store.BatchOf(one)
	assert.Equal(t, one[0].BatchID, id)
	assert.False(t, several)
	all := append(append([]store.SessionPartial{}, one...), two...)
	set, several := store.BatchOf(all)
	assert.True(t, several)
	assert.NotEqual(t, one[0].BatchID, set)
	assert.NotEqual(t, two[0].BatchID, set)
	swapped := append(append(append([]store.SessionPartial{}, two...), one...), one...)
	again, _ := store.BatchOf(swapped)
	assert.Equal(t, set, again, "the same batches give the same id")
	none, several := store.BatchOf(nil)
	assert.Empty(t, none)
	assert.False(t, several)
}

// TestRecordsRefuseWhatCannotBeReadBack: records larger than UnmarshalRecords decodes are refused
// when encoded (the request fails), not persisted as a queue entry lost at the next restart.
func TestRecordsRefuseWhatCannotBeReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates some 300 MiB")
	}
	big := store.Records{Spans: []store.SpanSummary{{TraceID: "t", SpanID: "s", StatusMessage: strings.Repeat("x", 129<<20)}}}
	_, err := store.MarshalRecords(big)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 spans")
}

// TestRecordsKeepDerivedExchanges: the flags the counting rule reads (SpanSummary.Exchange, a
// proxy-derived exchange; Edited, one a rerun's --set changed) survive the persistent queue's
// encoding, so the warm run index, written from the queue, counts an instrumented call and the
// exchange it made once, as the hot tier does.
func TestRecordsKeepDerivedExchanges(t *testing.T) {
	td := storetest.Traces(runB)
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i, edited := range []bool{false, true} {
		ex := ss.AppendEmpty()
		ex.SetTraceID(ss.At(0).TraceID())
		ex.SetSpanID(pcommon.SpanID{7: byte(0xe0 + i)})
		ex.SetParentSpanID(ss.At(0).SpanID())
		ex.SetName("POST /v1/chat/completions")
		a := ex.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "gpt-4.1")
		a.PutInt("gen_ai.usage.input_tokens", 100)
		a.PutStr(runagainattr.FixtureSource, "proxy")
		a.PutBool(runagainattr.GenAIDerived, true)
		if edited {
			a.PutStr(runagainattr.RerunEdits, "model=gpt-4.1")
		}
	}
	spans, _ := store.Summarize(td, nil, nil)
	var exchanges, edits int
	for _, s := range spans {
		if s.Exchange {
			exchanges++
		}
		if s.Edited {
			edits++
		}
	}
	require.Equal(t, 2, exchanges, "the two exchanges are derived")
	require.Equal(t, 1, edits)
	enc, err := store.MarshalRecords(store.Records{Spans: spans})
	require.NoError(t, err)
	out, err := store.UnmarshalRecords(enc)
	require.NoError(t, err)
	assert.Equal(t, spans, out.Spans, "the queue gives back what was queued, the exchange flags too")
}

// TestRecordsKeepSignals: the failure signals the summariser computed from the spans
// (SummarizeSignals) survive the persistent queue's encoding, so the warm writer does not read
// them back from each summary's attributes; records with a signal unknown (an older entry, or
// records built without the check) decode with every signal unknown, and a signals section of
// the wrong length is refused.
func TestRecordsKeepSignals(t *testing.T) {
	i := 0
	every3 := func(pcommon.Map) bool { i++; return i%3 == 0 }
	spans, _ := store.SummarizeSignals(storetest.Traces(runA, runB, runC), nil, nil, every3)
	require.Greater(t, len(spans), 8, "the bitset spans more than one byte")
	yes := 0
	for _, s := range spans {
		require.NotEqual(t, store.SignalUnknown, s.Signal)
		if s.Signal == store.SignalYes {
			yes++
		}
	}
	require.Equal(t, len(spans)/3, yes)
	in := store.Records{Spans: spans}
	enc, err := store.MarshalRecords(in)
	require.NoError(t, err)
	out, err := store.UnmarshalRecords(enc)
	require.NoError(t, err)
	assert.Equal(t, in, out)

	// One summary unknown: no section, every signal decodes unknown.
	in.Spans = append([]store.SpanSummary(nil), spans...)
	in.Spans[2].Signal = store.SignalUnknown
	enc, err = store.MarshalRecords(in)
	require.NoError(t, err)
	out, err = store.UnmarshalRecords(enc)
	require.NoError(t, err)
	for _, s := range out.Spans {
		assert.Equal(t, store.SignalUnknown, s.Signal)
	}

	// A section one byte short is malformed, not read as partly known.
	z, err := zstd.NewReader(nil)
	require.NoError(t, err)
	full, err := store.MarshalRecords(store.Records{Spans: spans})
	require.NoError(t, err)
	body, err := z.DecodeAll(full[4:], nil)
	require.NoError(t, err)
	w, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	_, err = store.UnmarshalRecords(append([]byte("RAR1"), w.EncodeAll(body[:len(body)-1], nil)...))
	assert.Error(t, err)
}
