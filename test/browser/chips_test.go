// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
	"github.com/runagain/runagain/internal/testutil/runtest"
)

// TestChipsCountAsTheHeader imports the corpus's Agno run (its agent and workflow spans carry
// GenAI attributes too, so more spans look like LLM calls than the counting rule counts) and
// opens its run page: the LLM calls chip counts what the header and `runagain
// show` count (one rule, internal/runview), and the LLM chip leaves exactly those rows.
// The chip used to count every span classified as an LLM call: 4 against the header's 2.
func TestChipsCountAsTheHeader(t *testing.T) {
	ctx, dlg := tab(t)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, langfuseTrace(t, "agno-2025-06-11.trace.json"))
	out, errOut, err := c.CLI("sessions", "--json")
	require.NoError(t, err, errOut)
	var runs []struct {
		TraceID string `json:"trace_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
	require.Len(t, runs, 1)
	traceID := runs[0].TraceID
	// What `runagain show` counts: the spans with an LLM step number.
	out, errOut, err = c.CLI("show", traceID, "--json")
	require.NoError(t, err, errOut)
	var shown struct {
		Spans []struct {
			GenAIKind string `json:"genai_kind"`
			LLMStep   int    `json:"llm_step"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	llmCalls, classified := 0, 0
	for _, s := range shown.Spans {
		if s.LLMStep > 0 {
			llmCalls++
		}
		if s.GenAIKind == "llm" {
			classified++
		}
	}
	require.Positive(t, llmCalls)
	require.Greater(t, classified, llmCalls, "the run this test needs: more spans classified as LLM calls than counted")
	ui := startUI(t, c)

	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+traceID), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	header := eval[string](t, ctx, `[...document.querySelectorAll('dt')].find(d => d.textContent == 'LLM calls').nextElementSibling.textContent.trim()`)
	assert.Equal(t, strconv.Itoa(llmCalls), header, "the header counts as runagain show")
	chip := func(kind string) string {
		return eval[string](t, ctx, `document.querySelector('#findbar .chip[data-kind=`+kind+`] b').textContent`)
	}
	assert.Equal(t, header, chip("llm"), "the LLM calls chip counts as the header")
	tools := eval[string](t, ctx, `[...document.querySelectorAll('dt')].find(d => d.textContent == 'Tool calls').nextElementSibling.textContent.trim()`)
	assert.Equal(t, tools, chip("tool"), "the tools chip counts as the header")
	shot(t, ctx, "run-chips")

	// The chip leaves the counted LLM calls, the rows with a step number.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#findbar .chip[data-kind=llm]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-found="`+header+`"]`)))
	steps := eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row')].map(r => r.dataset.step || '')`)
	want := []string{}
	for i := 1; i <= llmCalls; i++ {
		want = append(want, strconv.Itoa(i))
	}
	assert.Equal(t, want, steps, "LLM steps 1..N, nothing else")
	assert.Empty(t, dlg.opened())
}

// TestTestRunChipsAndRecords: the run page of an MCP agent's test run (its tool calls are the
// MCP exchanges; its divergence names the original run's exchange): the tools and divergences
// chips count what the header says and are enabled, the divergences chip leaves the root (where
// the divergence is pinned), the Records box lists only the divergence, and the agent's own log
// record is in the root's panel.
func TestTestRunChipsAndRecords(t *testing.T) {
	ctx, _ := tab(t)
	trace := pcommon.TraceID{0x7e, 0x57, 15: 0x11}
	td, logs := runtest.MCPTestRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC))
	ts := serveRun(t, &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: td, Logs: logs})
	root := pcommon.SpanID{trace[15], runtest.MCPRoot}.String()
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+trace.String()+"?span="+root), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	assert.Equal(t, "2", eval[string](t, ctx, `document.querySelector('.chip.tool b').textContent`))
	assert.False(t, eval[bool](t, ctx, `document.querySelector('.chip.divergence').disabled`))
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#marks li').length`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel details.logs').textContent`), "user clicked thumbs down")
	shot(t, ctx, "test-run-chips-records")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#findbar .chip[data-kind=divergence]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-found="1"]`)))
	assert.Equal(t, []string{root}, eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row')].map(r => r.dataset.span)`),
		"the divergence chip leaves the root it is pinned on")
}
