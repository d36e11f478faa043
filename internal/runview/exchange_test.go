// SPDX-License-Identifier: Apache-2.0

package runview_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/runtest"
)

// TestExchangesUnderTheirCall: each recorded exchange belongs to the LLM or tool call that made
// it (its nearest such ancestor); it reads as request and response, a streamed response as its
// SSE events one by one with their times; an exchange's own node gives itself; the agent span
// above both calls owns none (they are its calls'), and the step input carries the call's.
func TestExchangesUnderTheirCall(t *testing.T) {
	trace := pcommon.TraceID{15: 9}
	start := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	v, err := runview.Build(context.Background(), &store.Run{TraceID: trace.String(), Traces: runtest.StreamedRun(trace, start), Logs: plog.NewLogs()}, runview.Options{})
	require.NoError(t, err)
	node := func(id byte) int {
		n := v.NodeOf(pcommon.SpanID{9, id}.String())
		require.NotNil(t, n)
		return n.Index
	}
	assert.Empty(t, v.ExchangesOf(node(runtest.RootSpan)), "the agent's exchanges are its calls'")
	llm := v.ExchangesOf(node(runtest.LLMSpan))
	require.Len(t, llm, 1)
	ex := llm[0]
	assert.Equal(t, pcommon.SpanID{9, runtest.LLMExchange}.String(), ex.SpanID)
	assert.Equal(t, "POST", ex.Method)
	assert.Equal(t, "https://api.openai.com/v1/chat/completions", ex.URL)
	assert.Equal(t, 200, ex.Status)
	assert.Contains(t, ex.RequestBody, `"stream":true`)
	assert.Equal(t, []runview.Header{{Name: "content-type", Values: []string{"text/event-stream"}}, {Name: "x-request-id", Values: []string{"req_42"}}}, ex.ResponseHeaders)
	require.Len(t, ex.Events, len(runtest.SSEEvents))
	for k, e := range ex.Events {
		assert.Equal(t, runtest.SSEEvents[k], e.Data, "event %d", k)
		assert.Equal(t, time.Duration(400+300*k-150)*time.Millisecond, e.At, "event %d arrived then", k)
	}
	assert.Equal(t, strings.Join(runtest.SSEEvents, ""), ex.ResponseBody)
	assert.Equal(t, 950*time.Millisecond, ex.Duration)

	tool := v.ExchangesOf(node(runtest.ToolSpan))
	require.Len(t, tool, 1)
	assert.Equal(t, "GET", tool[0].Method)
	assert.Nil(t, tool[0].Events, "not a stream")
	assert.Contains(t, tool[0].ResponseBody, `"sky":"sunny"`)

	own := v.ExchangesOf(node(runtest.ToolExchange))
	require.Len(t, own, 1)
	assert.Equal(t, tool[0].SpanID, own[0].SpanID)

	in, err := v.StepInput(1)
	require.NoError(t, err)
	require.Len(t, in.Exchanges, 1)
	assert.Equal(t, ex.SpanID, in.Exchanges[0].SpanID)
	assert.Equal(t, int64(1), v.Totals.LLMCalls, "the exchange under the instrumented call is not counted again")
}

// TestExchangesPlacedUnderTheirCall: exchanges recorded beside the calls that made them (under
// the proxy's root) move under those calls: the LLM call's by the counting rule (time, model),
// the tool call's by its inferred span link. Each sits right below its call, one level deeper,
// names the call as its parent, keeps its recorded parent, and is the call's exchange; the
// steps and totals are those of the run recorded with parents.
func TestExchangesPlacedUnderTheirCall(t *testing.T) {
	trace := pcommon.TraceID{15: 8}
	start := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	build := func(td func(pcommon.TraceID, time.Time) ptrace.Traces) *runview.View {
		v, err := runview.Build(context.Background(), &store.Run{TraceID: trace.String(), Traces: td(trace, start), Logs: plog.NewLogs()}, runview.Options{})
		require.NoError(t, err)
		return v
	}
	v, ref := build(runtest.UnparentedRun), build(runtest.StreamedRun)
	node := func(id byte) *runview.Node {
		n := v.NodeOf(pcommon.SpanID{8, id}.String())
		require.NotNil(t, n)
		return n
	}
	proxy := node(runtest.ProxyRoot)
	for _, c := range []struct {
		call, ex byte
		how      runview.Placement
	}{{runtest.LLMSpan, runtest.LLMExchange, runview.PlacedByTime}, {runtest.ToolSpan, runtest.ToolExchange, runview.PlacedByLink}} {
		call, ex := node(c.call), node(c.ex)
		assert.Equal(t, call.Index+1, ex.Index, "right below its call")
		assert.Equal(t, call.Depth+1, ex.Depth)
		assert.Equal(t, call.Index, ex.Parent)
		assert.Equal(t, proxy.Index, ex.RecordedParent)
		assert.Equal(t, c.how, ex.Placement)
		exs := v.ExchangesOf(call.Index)
		require.Len(t, exs, 1)
		assert.Equal(t, ex.SpanID(), exs[0].SpanID)
		assert.Equal(t, ex.Index, exs[0].Node)
	}
	assert.Equal(t, runview.PlacedAsRecorded, proxy.Placement)
	for i, n := range v.Nodes {
		assert.Equal(t, i, n.Index)
		if n.Parent >= 0 {
			assert.Less(t, n.Parent, i, "a parent comes before its children")
		}
	}
	require.Len(t, v.Steps, len(ref.Steps))
	for k, st := range v.Steps {
		assert.Equal(t, ref.Steps[k].SpanID, st.SpanID)
		assert.Equal(t, k+1, st.Index)
		assert.Equal(t, st.SpanID, v.Nodes[st.Node].SpanID())
	}
	got := v.Totals
	assert.Equal(t, ref.Totals.Spans+1, got.Spans, "the proxy's root span")
	got.Spans = ref.Totals.Spans
	assert.Equal(t, ref.Totals, got)
}

// TestMCPExchangesUnderTheirToolCall: a tools/call recorded by `runagain mcp` reads as request
// (method, tool, arguments in recorded key order) and response (content items, isError), with
// the exact lines; it is its tool span's exchange whether recorded under it or beside it (moved
// under it by time and tool name), and the HTTP reader does not list it.
func TestMCPExchangesUnderTheirToolCall(t *testing.T) {
	trace := pcommon.TraceID{15: 7}
	v, err := runview.Build(context.Background(), &store.Run{TraceID: trace.String(), Traces: runtest.MCPRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}, runview.Options{})
	require.NoError(t, err)
	node := func(id byte) *runview.Node {
		n := v.NodeOf(pcommon.SpanID{7, id}.String())
		require.NotNil(t, n)
		return n
	}
	tool, call := node(runtest.MCPToolSpan), node(runtest.MCPToolCall)
	mx := v.MCPExchangesOf(tool.Index)
	require.Len(t, mx, 1)
	assert.Empty(t, v.ExchangesOf(tool.Index), "not an HTTP exchange")
	m := mx[0]
	assert.Equal(t, call.SpanID(), m.SpanID)
	assert.Equal(t, "tools/call", m.Method)
	assert.Equal(t, "append_note", m.Tool)
	assert.Equal(t, "notes", m.Server)
	assert.Equal(t, "7", m.RequestID)
	assert.Equal(t, `{"title":"Paris","text":"sunny, 21 °C","tags":["weather","fr"]}`, m.Arguments, "as recorded")
	assert.Equal(t, []runview.MCPContent{{Type: "text", Text: "appended note 3 (Paris)"}}, m.Content)
	assert.False(t, m.IsError)
	assert.Equal(t, runtest.MCPAppendRequest, m.Request)
	assert.Equal(t, runtest.MCPAppendResponse, m.Response)
	assert.Empty(t, m.ReadErr)
	assert.Equal(t, 360*time.Millisecond, m.Duration)

	failing, fcall := node(runtest.MCPFailingTool), node(runtest.MCPFailingCall)
	assert.Equal(t, runview.PlacedByTime, fcall.Placement)
	assert.Equal(t, failing.Index, fcall.Parent)
	assert.Equal(t, failing.Index+1, fcall.Index)
	fx := v.MCPExchangesOf(failing.Index)
	require.Len(t, fx, 1)
	assert.True(t, fx[0].IsError)
	assert.Equal(t, "no note titled Lyon", fx[0].Content[0].Text)
	assert.Equal(t, fcall.SpanID(), v.MCPExchangesOf(fcall.Index)[0].SpanID, "its own node gives itself")
	assert.Equal(t, int64(2), v.Totals.ToolCalls, "each tools/call counted once, on its tool span")
}
