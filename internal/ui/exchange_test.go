// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// eventsOf splits a text/event-stream body as a recording without chunk events is (runview:
// fixture.SplitEvents) and lays the events out as the panel does.
func eventsOf(t *testing.T, body string) []sseView {
	t.Helper()
	var evs []runview.SSEEvent
	for k, c := range fixture.SplitEvents([]byte(body)) {
		evs = append(evs, runview.SSEEvent{Index: k, Offset: c.Offset, Size: c.Size, Data: body[c.Offset : c.Offset+c.Size]})
	}
	vs := sseViews(evs)
	var whole strings.Builder
	for _, v := range vs {
		whole.WriteString(v.Data)
	}
	require.Equal(t, body, whole.String(), "every byte of the body is in one event, in order")
	return vs
}

func TestSSEEventsSplitAtBlankLines(t *testing.T) {
	vs := eventsOf(t, "data: {\"a\":1,\"b\":[1,2]}\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n")
	require.Len(t, vs, 3)
	assert.Equal(t, fixture.EventFields{Data: `{"a":1,"b":[1,2]}`, HasData: true}, vs[0].Fields)
	assert.Equal(t, "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}", vs[0].Pretty, "JSON data indented, keys in recorded order")
	assert.Equal(t, "ping", vs[1].Fields.Event)
	assert.Equal(t, "x", vs[1].Fields.Data)
	assert.Empty(t, vs[1].Pretty, "not JSON: shown as recorded")
	assert.Equal(t, "[DONE]", vs[2].Fields.Data)
	assert.Empty(t, vs[2].Pretty, "[DONE] is not JSON: shown as recorded")
	assert.Equal(t, "data: [DONE]", vs[2].Text, "the recorded bytes, line end trimmed")
	for _, v := range vs {
		assert.False(t, v.Fields.Raw)
	}
}

func TestSSEMultiLineDataAndFields(t *testing.T) {
	vs := eventsOf(t, ": keep-alive\nid: 7\nretry: 3000\nevent: message_delta\ndata: {\"x\":\ndata:  1}\nfoo: ignored\n\n")
	require.Len(t, vs, 1)
	f := vs[0].Fields
	assert.Equal(t, []string{"keep-alive"}, f.Comments)
	assert.Equal(t, "7", f.ID)
	assert.Equal(t, "3000", f.Retry)
	assert.Equal(t, "message_delta", f.Event)
	assert.Equal(t, "{\"x\":\n 1}", f.Data, "data lines join with a newline; one space after the colon dropped")
	assert.Equal(t, "{\n  \"x\": 1\n}", vs[0].Pretty)
}

func TestSSECRLF(t *testing.T) {
	vs := eventsOf(t, "event: a\r\ndata: 1\r\n\r\ndata: {\"k\":\"v\"}\r\n\r\ndata: last\r\r")
	require.Len(t, vs, 3)
	assert.Equal(t, fixture.EventFields{Event: "a", Data: "1", HasData: true}, vs[0].Fields)
	assert.Equal(t, `{"k":"v"}`, vs[1].Fields.Data)
	assert.NotEmpty(t, vs[1].Pretty)
	assert.Equal(t, "last", vs[2].Fields.Data, "CR alone ends lines too")
}

func TestSSENotSSEShownRawAndCounted(t *testing.T) {
	// A stream labelled text/event-stream that is not: one event, raw, nothing dropped.
	vs := eventsOf(t, `{"error":"upstream said no"}`)
	require.Len(t, vs, 1)
	assert.True(t, vs[0].Fields.Raw)
	assert.Equal(t, `{"error":"upstream said no"}`, vs[0].Text)

	// Good events, then a tail with no blank line and no field: counted as an event of its own.
	vs = eventsOf(t, "data: ok\n\nhello world\nmore text")
	require.Len(t, vs, 2)
	assert.False(t, vs[0].Fields.Raw)
	assert.True(t, vs[1].Fields.Raw)
	assert.Equal(t, "hello world\nmore text", vs[1].Text)

	// An event cut before its blank line still shows its data.
	vs = eventsOf(t, "data: {\"a\":1}\n\ndata: {\"partial\":")
	require.Len(t, vs, 2)
	assert.Equal(t, `{"partial":`, vs[1].Fields.Data)
	assert.Empty(t, vs[1].Pretty)
}

func TestSSELongStreamsListAFewHundred(t *testing.T) {
	body := strings.Repeat("data: {\"a\":1}\n\n", sseEventLimit+20)
	var evs []runview.SSEEvent
	for k, c := range fixture.SplitEvents([]byte(body)) {
		evs = append(evs, runview.SSEEvent{Index: k, Offset: c.Offset, Size: c.Size, Data: body[c.Offset : c.Offset+c.Size]})
	}
	vs := sseViews(evs)
	require.Len(t, vs, sseEventLimit)
	assert.NotEmpty(t, vs[ssePrettyLimit-1].Pretty)
	assert.Empty(t, vs[ssePrettyLimit].Pretty, "past the limit data shows as recorded")
	assert.Equal(t, `{"a":1}`, vs[ssePrettyLimit].DataText)
}

// TestBinaryBodyDownloadsAsItsBytes: a body that is not UTF-8 is recorded as a bytes attribute;
// download answers those bytes, not their base64.
func TestBinaryBodyDownloadsAsItsBytes(t *testing.T) {
	trace := pcommon.TraceID{0xb1, 15: 9}
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	body := []byte{0xff, 0x00, 'P', 'N', 'G', 0x89}
	fixture.ToSpan(&fixture.Exchange{Method: http.MethodGet, URL: "https://x.example/img", Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"image/png"}}, ResponseBody: body, Source: "proxy",
		Start: time.Unix(100, 0), End: time.Unix(101, 0)}, sp)
	sp.SetTraceID(trace)
	sp.SetSpanID(pcommon.SpanID{9, 1})
	r := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: td, Logs: plog.NewLogs()}
	_, ts := newTestServer(t, r)
	resp, err := http.Get(ts.URL + "/runs/" + r.TraceID + "/spans/" + sp.SpanID().String() + "/attr?key=" + fixture.AttrResponseBody + "&download=1")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, body, got)
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
}
