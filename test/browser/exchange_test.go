// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/runtest"
	"github.com/runagain/runagain/internal/ui"
)

// TestExchangeUnderItsCall: the LLM call's panel shows the HTTP exchange it made as request and
// response (method, URL, status, headers, body) with the streamed answer as its SSE events one by
// one; the exchange's timeline row sits under the call, named by what it asked and got; its own
// panel leads with the same request and response and folds the flat attributes away.
func TestExchangeUnderItsCall(t *testing.T) {
	ctx, dlg := tab(t)
	trace := pcommon.TraceID{0x5e, 0xe0, 15: 3}
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: runtest.StreamedRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}
	ts := serveRun(t, run)
	llm, llmEx := pcommon.SpanID{3, runtest.LLMSpan}.String(), pcommon.SpanID{3, runtest.LLMExchange}.String()

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+llm), chromedp.WaitVisible(chromedp.CSS(`#panel section.exchange`)))
	sec := `document.querySelector('#panel section.exchange[data-exchange="` + llmEx + `"]')`
	h := eval[string](t, ctx, sec+`.querySelector('h3').textContent`)
	assert.Contains(t, h, "POST https://api.openai.com/v1/chat/completions")
	assert.Contains(t, h, "200 OK")
	assert.Contains(t, eval[string](t, ctx, sec+`.querySelector('[data-side=request]').textContent`), `"stream": true`, "the request body, indented")
	assert.Contains(t, eval[string](t, ctx, sec+`.querySelector('[data-side=request] table.headers').textContent`), "[REDACTED]")
	assert.Contains(t, eval[string](t, ctx, sec+`.querySelector('[data-side=response] table.headers').textContent`), "text/event-stream")
	events := eval[[]string](t, ctx, `[...`+sec+`.querySelectorAll('[data-sse-event] pre[data-sse-raw]')].map(p => p.textContent)`)
	require.Len(t, events, len(runtest.SSEEvents), "one entry per SSE event")
	for k, e := range runtest.SSEEvents {
		assert.Equal(t, strings.TrimRight(e, "\n"), events[k], "event %d as recorded", k)
	}
	// Each event's data: field, its JSON indented (keys in recorded order); [DONE] as sent.
	data := eval[[]string](t, ctx, `[...`+sec+`.querySelectorAll('[data-sse-event] [data-sse-field=data] pre[data-sse-data]')].map(p => p.textContent)`)
	require.Len(t, data, 3)
	assert.True(t, strings.HasPrefix(data[0], "{\n  \"id\": \"c1\",\n  \"object\": \"chat.completion.chunk\","), data[0])
	assert.Contains(t, data[0], "\"delta\": {\n        \"role\": \"assistant\",\n        \"content\": \"It is \"")
	assert.Contains(t, data[1], "\"finish_reason\": \"stop\"")
	assert.Equal(t, "[DONE]", data[2])
	assert.Equal(t, []string{"data:", "data:", "data:"}, eval[[]string](t, ctx, `[...`+sec+`.querySelectorAll('[data-sse-field=data] .fname')].map(n => n.textContent)`))
	assert.False(t, eval[bool](t, ctx, sec+`.querySelector('[data-sse-raw]').closest('details').open`), "the recorded bytes fold away under 'as recorded'")
	// The whole streamed body downloads as the recorded bytes.
	href := eval[string](t, ctx, sec+`.querySelector('[data-sse-body] a.download').href`)
	resp, err := http.Get(href)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, strings.Join(runtest.SSEEvents, ""), string(b))
	assert.Contains(t, eval[string](t, ctx, sec+`.querySelector('[data-sse-event="2"] .dim').textContent`), "+850ms")

	// The timeline: the exchange's row is the call's child, named by what it asked and got.
	rowName := eval[string](t, ctx, `document.querySelector('.row[data-span="`+llmEx+`"] .name').textContent`)
	assert.Contains(t, rowName, "POST api.openai.com/v1/chat/completions → 200")
	pad := func(id string) int {
		return eval[int](t, ctx, `parseInt(document.querySelector('.row[data-span="`+id+`"] .name').style.paddingLeft)`)
	}
	assert.Greater(t, pad(llmEx), pad(llm), "nested under the call")
	shot(t, ctx, "exchange-under-llm-call")

	// The exchange's own panel, reached from the call's.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#panel section.exchange a[data-select]`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+llmEx+`"] section.exchange`)))
	assert.Equal(t, 3, eval[int](t, ctx, `document.querySelectorAll('#panel [data-sse-event]').length`))
	assert.False(t, eval[bool](t, ctx, `document.querySelector('#panel details.attributes').open`), "the flat attribute rows start folded")
	shot(t, ctx, "exchange-own-panel")
	assert.Empty(t, dlg.opened())
}

// TestJSONFoldsPerKey: any object or array key of an indented JSON value folds and unfolds, by
// mouse and by keyboard (Tab to the toggle, Enter; ArrowLeft / ArrowRight), showing how many keys
// it hides; the text itself stays the recorded value.
func TestJSONFoldsPerKey(t *testing.T) {
	ctx, dlg := tab(t)
	trace := pcommon.TraceID{0x5e, 0xe1, 15: 4}
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: runtest.StreamedRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}
	ts := serveRun(t, run)
	wx := pcommon.SpanID{4, runtest.ToolExchange}.String()

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+wx), chromedp.WaitVisible(chromedp.CSS(`#panel pre[data-foldable][data-body="http.response.body"]`)))
	pre := `document.querySelector('#panel pre[data-body="http.response.body"]')`
	before := eval[string](t, ctx, pre+`.textContent`)
	assert.Equal(t, "{\n  \"city\": \"Paris\",\n  \"now\": {\n    \"sky\": \"sunny\",\n    \"temp_c\": 21,\n    \"wind\": {\n      \"kph\": 9,\n      \"dir\": \"W\"\n    }\n  },\n  \"alerts\": []\n}", before)
	keys := eval[[]string](t, ctx, `[...`+pre+`.querySelectorAll('.jnode')].map(n => n.getAttribute('data-key') || '')`)
	assert.Equal(t, []string{"", "now", "wind"}, keys, "the whole value, and every key holding an object or array with members")
	hidden := func(key string) bool {
		return eval[bool](t, ctx, `getComputedStyle(`+pre+`.querySelector('.jnode[data-key="`+key+`"] > .jbody')).display === 'none'`)
	}

	// Mouse: fold "wind" only.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#panel pre[data-body="http.response.body"] .jnode[data-key="wind"] > .jtog`)))
	assert.True(t, hidden("wind"))
	assert.False(t, hidden("now"), "only the key clicked folds")
	assert.Equal(t, "… 2 keys", eval[string](t, ctx, `getComputedStyle(`+pre+`.querySelector('.jnode[data-key="wind"] > .jsum'), '::before').content.replace(/^"|"$/g, '')`))

	// Keyboard: focus the "now" toggle, Enter folds it, ArrowRight unfolds, ArrowLeft folds.
	do(t, ctx, chromedp.Focus(chromedp.CSS(`#panel pre[data-body="http.response.body"] .jnode[data-key="now"] > .jtog`)))
	assert.Equal(t, "fold now", eval[string](t, ctx, `document.activeElement.getAttribute('aria-label')`))
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	assert.True(t, hidden("now"))
	assert.Equal(t, "false", eval[string](t, ctx, `document.activeElement.getAttribute('aria-expanded')`))
	shot(t, ctx, "json-fold-key")
	do(t, ctx, chromedp.KeyEvent(kb.ArrowRight))
	assert.False(t, hidden("now"))
	do(t, ctx, chromedp.KeyEvent(kb.ArrowLeft))
	assert.True(t, hidden("now"))
	assert.Equal(t, before, eval[string](t, ctx, pre+`.textContent`), "folding never changes the text")
	assert.Empty(t, dlg.opened())
}

// TestSSEDataFoldsPerKey: the JSON data of a streamed response's events folds key by key, as
// a body does: clicking the key "delta" (its text, not only the toggle) in the first event
// folds its value alone, showing how many keys
// it hides; clicking again restores the text as it was.
func TestSSEDataFoldsPerKey(t *testing.T) {
	ctx, dlg := tab(t)
	trace := pcommon.TraceID{0x5e, 0xe1, 15: 6}
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: runtest.StreamedRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}
	ts := serveRun(t, run)
	llm := pcommon.SpanID{6, runtest.LLMSpan}.String()

	ev := `#panel [data-sse-event="0"] pre[data-sse-data]`
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+llm), chromedp.WaitVisible(chromedp.CSS(ev+`[data-foldable]`)))
	pre := `document.querySelector('` + ev + `')`
	before := eval[string](t, ctx, pre+`.textContent`)
	keys := eval[[]string](t, ctx, `[...`+pre+`.querySelectorAll('.jnode')].map(n => n.getAttribute('data-key') || '')`)
	assert.Equal(t, []string{"", "choices", "", "delta"}, keys, "the value, choices, its item, delta")
	hidden := func(key string) bool {
		return eval[bool](t, ctx, `getComputedStyle(`+pre+`.querySelector('.jnode[data-key="`+key+`"] > .jbody')).display === 'none'`)
	}
	assert.False(t, hidden("delta"))

	do(t, ctx, chromedp.Click(chromedp.CSS(ev+` .jnode[data-key="delta"] > .jtog`)))
	assert.True(t, hidden("delta"))
	assert.Equal(t, "false", eval[string](t, ctx, pre+`.querySelector('.jnode[data-key="delta"] > .jtog').getAttribute('aria-expanded')`))
	assert.False(t, hidden("choices"), "only the key clicked folds")
	assert.Equal(t, "… 2 keys", eval[string](t, ctx, `getComputedStyle(`+pre+`.querySelector('.jnode[data-key="delta"] > .jsum'), '::before').content.replace(/^"|"$/g, '')`))
	assert.NotContains(t, eval[string](t, ctx, pre+`.innerText`), "assistant", "the folded value is off screen")
	shot(t, ctx, "sse-data-fold-key")

	do(t, ctx, chromedp.Click(chromedp.CSS(ev+` .jnode[data-key="delta"] > .jtog`)))
	assert.False(t, hidden("delta"))
	assert.Contains(t, eval[string](t, ctx, pre+`.innerText`), "assistant")
	assert.Equal(t, before, eval[string](t, ctx, pre+`.textContent`), "folding never changes the text")
	assert.Empty(t, dlg.opened())
}

// TestExchangeMovedUnderItsCall: exchanges the proxy recorded beside the calls that made them
// (under its own root span, as for an agent that does not propagate traceparent) are drawn
// under those calls, as descendant ones are: the LLM call's, tied to it by time and model, and
// the tool call's, tied by an inferred span link. Each row comes right after its call, indented
// below it, folds with it, and the call's panel shows the exchange; the exchange's panel keeps
// its recorded parent and says under which call it is shown, and why.
func TestExchangeMovedUnderItsCall(t *testing.T) {
	ctx, dlg := tab(t)
	trace := pcommon.TraceID{0x5e, 0xe2, 15: 7}
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: runtest.UnparentedRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}
	ts := serveRun(t, run)
	id := func(b byte) string { return pcommon.SpanID{7, b}.String() }
	llm, llmEx, tool, toolEx, proxy := id(runtest.LLMSpan), id(runtest.LLMExchange), id(runtest.ToolSpan), id(runtest.ToolExchange), id(runtest.ProxyRoot)

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+llm), chromedp.WaitVisible(chromedp.CSS(`#panel section.exchange[data-exchange="`+llmEx+`"]`)))
	order := eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row[data-span]')].map(r => r.dataset.span)`)
	pos := func(s string) int {
		for k, o := range order {
			if o == s {
				return k
			}
		}
		t.Fatalf("row %s not on the timeline: %v", s, order)
		return -1
	}
	assert.Equal(t, pos(llm)+1, pos(llmEx), "the LLM exchange right after its call")
	assert.Equal(t, pos(tool)+1, pos(toolEx), "the tool's exchange right after its call")
	pad := func(id string) int {
		return eval[int](t, ctx, `parseInt(document.querySelector('.row[data-span="`+id+`"] .name').style.paddingLeft)`)
	}
	assert.Greater(t, pad(llmEx), pad(llm), "indented under the LLM call")
	assert.Greater(t, pad(toolEx), pad(tool), "indented under the tool call")
	assert.Equal(t, pad(llm), pad(proxy), "the proxy's root stays where it was recorded")
	shot(t, ctx, "exchange-moved-under-call")

	// Folding the tool call folds its exchange with it.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#canvas .row[data-span="`+tool+`"] [data-fold]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-shown="5"]`)))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#canvas .row[data-span="`+toolEx+`"]').length`), "folded with its call")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#canvas .row[data-span="`+tool+`"] [data-fold]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-shown="6"]`)))

	// The tool call's panel shows its exchange; the exchange's panel says why it is shown there.
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+tool), chromedp.WaitVisible(chromedp.CSS(`#panel section.exchange[data-exchange="`+toolEx+`"]`)))
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+toolEx), chromedp.WaitVisible(chromedp.CSS(`#panel [data-placed]`)))
	assert.Equal(t, "inferred_link", eval[string](t, ctx, `document.querySelector('#panel [data-placed]').dataset.placed`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel [data-placed]').textContent`), tool)
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel .facts').textContent`), proxy, "the recorded parent is still named")
	shot(t, ctx, "exchange-moved-panel")
	assert.Empty(t, dlg.opened())
}

// TestMCPExchangeUnderItsToolCall: a tools/call recorded by `runagain mcp` shows on its tool
// call's panel like an HTTP exchange: the request (method, tool name, arguments indented in
// recorded key order) and the response (each content item, isError), with the exact JSON-RPC
// lines; its timeline row sits under the tool span, also when it was recorded beside it.
func TestMCPExchangeUnderItsToolCall(t *testing.T) {
	ctx, dlg := tab(t)
	trace := pcommon.TraceID{0x5e, 0xe3, 15: 9}
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: runtest.MCPRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)), Logs: plog.NewLogs()}
	ts := serveRun(t, run)
	id := func(b byte) string { return pcommon.SpanID{9, b}.String() }
	tool, call, failing, fcall := id(runtest.MCPToolSpan), id(runtest.MCPToolCall), id(runtest.MCPFailingTool), id(runtest.MCPFailingCall)

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+tool), chromedp.WaitVisible(chromedp.CSS(`#panel section[data-mcp-exchange="`+call+`"]`)))
	sec := `document.querySelector('#panel section[data-mcp-exchange="` + call + `"]')`
	h := eval[string](t, ctx, sec+`.querySelector('h3').textContent`)
	assert.Contains(t, h, "MCP exchange of this call tools/call append_note")
	assert.Contains(t, h, "server notes")
	assert.Equal(t, "ok", eval[string](t, ctx, sec+`.querySelector('.xstatus').dataset.outcome`))
	assert.Equal(t, "append_note", eval[string](t, ctx, sec+`.querySelector('[data-mcp=tool]').textContent`))
	assert.Equal(t, "{\n  \"title\": \"Paris\",\n  \"text\": \"sunny, 21 °C\",\n  \"tags\": [\n    \"weather\",\n    \"fr\"\n  ]\n}",
		eval[string](t, ctx, sec+`.querySelector('[data-mcp=arguments] pre').textContent`), "indented, keys in recorded order")
	assert.Equal(t, []string{"appended note 3 (Paris)"}, eval[[]string](t, ctx, `[...`+sec+`.querySelectorAll('[data-mcp=content] li pre')].map(p => p.textContent)`))
	assert.JSONEq(t, runtest.MCPAppendRequest, eval[string](t, ctx, sec+`.querySelector('[data-body="runagain.mcp.request"]').textContent`))
	assert.JSONEq(t, runtest.MCPAppendResponse, eval[string](t, ctx, sec+`.querySelector('[data-body="runagain.mcp.response"]').textContent`))
	// Download gives the exact recorded line.
	dl := eval[string](t, ctx, sec+`.querySelector('[data-side=response] a.download').href`)
	resp, err := http.Get(dl)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, runtest.MCPAppendResponse, string(b))
	order := eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row[data-span]')].map(r => r.dataset.span)`)
	pad := func(id string) int {
		return eval[int](t, ctx, `parseInt(document.querySelector('.row[data-span="`+id+`"] .name').style.paddingLeft)`)
	}
	assert.Greater(t, pad(call), pad(tool), "nested under the tool span")
	assert.Equal(t, "mcp", eval[string](t, ctx, `document.querySelector('.row[data-span="`+call+`"] .k').textContent`))
	shot(t, ctx, "mcp-exchange-under-tool-call")

	// The failing call, recorded beside its tool span, is drawn under it and shown on its panel.
	idx := func(s string) int {
		for k, o := range order {
			if o == s {
				return k
			}
		}
		return -1
	}
	assert.Equal(t, idx(failing)+1, idx(fcall), "moved right after its tool span")
	assert.Greater(t, pad(fcall), pad(failing))
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+failing), chromedp.WaitVisible(chromedp.CSS(`#panel section[data-mcp-exchange="`+fcall+`"]`)))
	fsec := `document.querySelector('#panel section[data-mcp-exchange="` + fcall + `"]')`
	assert.Equal(t, "isError", eval[string](t, ctx, fsec+`.querySelector('.xstatus').dataset.outcome`))
	assert.True(t, eval[bool](t, ctx, fsec+`.querySelector('.xstatus').classList.contains('bad')`))
	assert.Contains(t, eval[string](t, ctx, fsec+`.querySelector('[data-side=response] h4').textContent`), "isError: true")
	assert.Equal(t, "no note titled Lyon", eval[string](t, ctx, fsec+`.querySelector('[data-mcp=content] li pre').textContent`))
	shot(t, ctx, "mcp-exchange-iserror")
	assert.Empty(t, dlg.opened())
}

// serveRun serves the UI over one stored run (an in-memory reader) for the test's length.
func serveRun(t *testing.T, run *store.Run) *httptest.Server {
	t.Helper()
	srv, err := ui.New(ui.Options{Reader: memReader{run.TraceID: run}})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts
}
