// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// withTool adds a tool call named name under td's root span (turnRun's), before its LLM call.
func withTool(td ptrace.Traces, name string, i byte) ptrace.Traces {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	root := spans.At(0)
	sp := spans.AppendEmpty()
	sp.SetTraceID(root.TraceID())
	sp.SetSpanID(pcommon.SpanID{root.TraceID()[15], 0x10 + i})
	sp.SetParentSpanID(root.SpanID())
	sp.SetName("execute_tool " + name)
	start := root.StartTimestamp().AsTime().Add(time.Duration(i+1) * time.Millisecond)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
	sp.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	sp.Attributes().PutStr("gen_ai.tool.name", name)
	return td
}

// renamed sets the agent name of every span of td.
func renamed(td ptrace.Traces, agent string) ptrace.Traces {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		if _, ok := spans.At(i).Attributes().Get("gen_ai.agent.name"); ok {
			spans.At(i).Attributes().PutStr("gen_ai.agent.name", agent)
		}
	}
	return td
}

// TestPatternsPages records failing runs whose errors differ only by a number and an id, one
// run failing otherwise, and passing runs of the same and of another agent, then walks the UI:
// the Patterns page lists the two patterns with the IDs, counts and shares `runagain patterns
// --json` prints; a pattern's page names its representative failing step and diffs it against
// the most alike passing run of the same agent (not the one nearest in time, nor another agent's
// identical run); its run count opens the sessions list filtered to exactly its runs; a run page
// links its pattern; and "Add these runs to a dataset" freezes the pattern's runs, each expecting
// no_pattern=ID, refusing a POST without the form token or from another site.
func TestPatternsPages(t *testing.T) {
	ctx, dlg := tab(t)
	now := time.Now().UTC().Truncate(time.Second)
	id := func(b byte) pcommon.TraceID {
		return pcommon.TraceID{0x70, 0x61, 0x74, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b}
	}
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	timeouts := []pcommon.TraceID{id(1), id(2), id(3)}
	runs := []ptrace.Traces{
		withTool(turnRun(timeouts[0], at(-50), "s1", "Where is order 1?", "", "upstream timeout after 3021 ms (request req_8f2a1c77)", time.Second), "lookup_order", 0),
		withTool(turnRun(timeouts[1], at(-40), "s2", "Where is order 2?", "", "upstream timeout after 998 ms (request req_00b1d3e9)", time.Second), "lookup_order", 0),
		withTool(turnRun(timeouts[2], at(-30), "s3", "Where is order 3?", "", "upstream timeout after 15000 ms (request req_c0ffee12)", time.Second), "lookup_order", 0),
		turnRun(id(4), at(-25), "s4", "Refund me", "", "invalid api key", time.Second),
		// Passing runs: the most alike (same steps) is further in time than another passing run
		// with other steps, and an identical run of another agent is nearer still.
		withTool(turnRun(id(5), at(-120), "s5", "Where is order 5?", "It ships today.", "", time.Second), "lookup_order", 0),
		withTool(withTool(turnRun(id(6), at(-29), "s6", "Hello", "Hi.", "", time.Second), "search_web", 0), "search_web", 1),
		renamed(withTool(turnRun(id(7), at(-31), "s7", "Where is order 7?", "It ships today.", "", time.Second), "lookup_order", 0), "billing"),
	}
	c := collectortest.Start(t, collectortest.Options{})
	var files []string
	for i, td := range runs {
		files = append(files, writeOTLP(t, "run"+string(rune('a'+i))+".json", td))
	}
	importRuns(t, c, len(runs), files...)

	// The CLI's listing: what the page must say.
	out, errOut, err := c.CLI("patterns", "--json")
	require.NoError(t, err, errOut)
	var rep struct {
		Runs     int64 `json:"runs"`
		Failing  int64 `json:"failing"`
		Patterns []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Runs  int64  `json:"runs"`
		} `json:"patterns"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Patterns, 2, out)
	require.EqualValues(t, 3, rep.Patterns[0].Runs, "the three timeouts differ only by numbers and ids: one pattern")
	pid := rep.Patterns[0].ID

	ui := startUI(t, c)
	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs`)),
		chromedp.Click(chromedp.CSS(`header nav a[href="/patterns"]`)), chromedp.WaitVisible(chromedp.CSS(`#patterns`)))
	shot(t, ctx, "patterns")
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll('#patterns tbody tr')].map(r => r.dataset.pattern)`)
	assert.Equal(t, []string{rep.Patterns[0].ID, rep.Patterns[1].ID}, ids, "most runs first, as the CLI lists them")
	row := `document.querySelector('#patterns tr[data-pattern="` + pid + `"]')`
	assert.Equal(t, rep.Patterns[0].Title, eval[string](t, ctx, row+`.querySelector('td.sig').firstChild.textContent`))
	assert.Contains(t, rep.Patterns[0].Title, "upstream timeout after <n> ms", "the number is a placeholder")
	cells := eval[[]string](t, ctx, `[...`+row+`.querySelectorAll('td.num')].map(td => td.textContent.trim())`)
	assert.Equal(t, []string{"3", "42.9%", "75.0%"}, cells[:3], "runs, share of the 7 runs, share of the 4 failing")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#count').textContent`), "7 runs, 4 failing, 2 patterns")

	// The pattern's page.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#patterns tr[data-pattern="`+pid+`"] td a.mono`)), chromedp.WaitVisible(chromedp.CSS(`#representative`)))
	shot(t, ctx, "pattern")
	assert.Equal(t, "/patterns/"+pid, eval[string](t, ctx, `location.pathname`))
	assert.Equal(t, timeouts[2].String(), eval[string](t, ctx, `document.querySelector('#representative a.mono').textContent`), "the newest run")
	assert.Equal(t, "chat gpt-4o", eval[string](t, ctx, `document.querySelector('#failingstep').textContent`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#failingmsg').textContent`), "15000 ms (request req_c0ffee12)", "the example's own message")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#nearest').textContent`), id(5).String(),
		"the passing run of the same agent with the same steps, not the nearer one with other steps nor another agent's")
	listed := eval[[]string](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.trace)`)
	assert.Equal(t, []string{timeouts[2].String(), timeouts[1].String(), timeouts[0].String()}, listed, "its runs, newest first")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#diffnearest`)), chromedp.WaitVisible(chromedp.CSS(`#diffgrid`)))
	q, _ := url.ParseQuery(strings.TrimPrefix(eval[string](t, ctx, `location.search`), "?"))
	assert.Equal(t, id(5).String(), q.Get("a"))
	assert.Equal(t, timeouts[2].String(), q.Get("b"))
	shot(t, ctx, "pattern-diff-nearest")

	// Its runs on the sessions page.
	do(t, ctx, chromedp.Navigate(ui.URL+"/patterns"), chromedp.WaitVisible(chromedp.CSS(`#patterns`)),
		chromedp.Click(chromedp.CSS(`#patterns tr[data-pattern="`+pid+`"] a.runcount`)), chromedp.WaitVisible(chromedp.CSS(`#patternfilter`)))
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.trace)`)
	sort.Strings(got)
	assert.Equal(t, []string{timeouts[0].String(), timeouts[1].String(), timeouts[2].String()}, got)
	shot(t, ctx, "sessions-of-pattern")

	// A failing run links its pattern; a passing run has none.
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+timeouts[0].String()), chromedp.WaitVisible(chromedp.CSS(`#runpattern`)))
	assert.Equal(t, "/patterns/"+pid, eval[string](t, ctx, `document.querySelector('#runpattern').getAttribute('href')`))
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+id(5).String()), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready]`)))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#runpattern').length`))

	// Freeze the pattern into a dataset.
	do(t, ctx, chromedp.Navigate(ui.URL+"/patterns/"+pid), chromedp.WaitVisible(chromedp.CSS(`#addpattern summary`)),
		chromedp.Click(chromedp.CSS(`#addpattern summary`)),
		chromedp.SendKeys(chromedp.CSS(`#addpattern input[name=name]`), "timeouts"))
	shot(t, ctx, "pattern-add-to-dataset")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#addpattern button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#cases`)))
	assert.True(t, strings.HasPrefix(eval[string](t, ctx, `location.pathname`), "/datasets/timeouts/"))
	cases := eval[[]string](t, ctx, `[...document.querySelectorAll('#cases tbody tr')].map(r => r.querySelector('.expect').textContent)`)
	assert.Len(t, cases, 3, "every run of the pattern (3 < the default limit)")
	for _, e := range cases {
		assert.Contains(t, e, pid)
	}
	shot(t, ctx, "pattern-dataset")
	dsOut, _, err := c.CLI("dataset", "show", "timeouts")
	require.NoError(t, err)
	assert.Contains(t, dsOut, "no_pattern")

	// Refused: no form token; another site's request.
	do(t, ctx, chromedp.Navigate(ui.URL+"/patterns/"+pid), chromedp.WaitReady(chromedp.CSS(`#addpattern input[name=csrf]`)))
	csrf := eval[string](t, ctx, `document.querySelector('#addpattern input[name=csrf]').value`)
	post := func(form url.Values, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, ui.URL+"/patterns/"+pid+"/dataset", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	form := url.Values{"name": {"timeouts2"}}
	assert.Equal(t, http.StatusForbidden, post(form, nil), "no csrf token")
	form.Set("csrf", csrf)
	assert.Equal(t, http.StatusForbidden, post(form, map[string]string{"Sec-Fetch-Site": "cross-site"}), "from another site")
	assert.Equal(t, http.StatusSeeOther, post(form, map[string]string{"Sec-Fetch-Site": "same-origin"}), "the page's own form")
	assert.Empty(t, dlg.opened())
}
