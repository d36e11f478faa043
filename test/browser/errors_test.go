// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestErrorPagesAndSmallBreaks: error pages keep the navigation and say what to do
// (steps/abc, a missing run, ?page=99999), the Parent link of a step page leads to the parent's
// panel and a parent that never arrived is named, not linked; a right-to-left override in a
// payload is shown escaped; at 768 px nothing overflows the window.
func TestErrorPagesAndSmallBreaks(t *testing.T) {
	ctx, dlg := tab(t)
	run := pcommon.TraceID{0x72, 0x75, 0x6e, 0xe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe1}
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, writeOTLP(t, "broken.json", brokenRun(run, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), false)))
	ui := startUI(t, c)
	status := func(path string) int {
		resp, err := http.Get(ui.URL + path)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	id := run.String()
	for path, want := range map[string]int{"/runs/" + id + "/steps/abc": 400, "/runs/" + id + "/steps/7": 404,
		"/runs/72756e0e0000000000000000000000ff": 404, "/?page=99999": 404, "/no/such/page": 404} {
		assert.Equal(t, want, status(path), path)
	}

	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+id+"/steps/abc"), chromedp.WaitVisible(chromedp.CSS(`#error`)))
	assert.Equal(t, "400", eval[string](t, ctx, `document.querySelector('#error').dataset.code`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#error .error').textContent`), `step "abc" is not a number: run `+id+` has LLM steps 1..1`)
	assert.Equal(t, []string{"Sessions", "Patterns", "Diff", "Datasets", "Quarantine"}, eval[[]string](t, ctx, `[...document.querySelectorAll('header.top nav a')].map(a => a.textContent)`), "the navigation is there")
	assert.Equal(t, "/runs/"+id, eval[string](t, ctx, `document.querySelector('#error .next a[href^="/runs/"]').getAttribute('href')`), "a link back to the run")
	shot(t, ctx, "error-step-abc")

	do(t, ctx, chromedp.Navigate(ui.URL+"/?page=99999"), chromedp.WaitVisible(chromedp.CSS(`#error`)))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#error').textContent`), "page 99999 is past the last page: 1 runs match, 50 a page, so pages 1 to 1")
	assert.NotContains(t, eval[string](t, ctx, `document.querySelector('#count').textContent`), "4999901")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#error a`)), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	assert.Equal(t, ui.URL+"/?page=1", eval[string](t, ctx, `location.href`))

	// The step page's Parent link opens the parent's panel on the run page.
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+id+"/steps/1"), chromedp.WaitVisible(chromedp.CSS(`.steppage`)))
	text := eval[string](t, ctx, `document.querySelector('.steppage [data-messages=input]').textContent`)
	assert.Contains(t, text, "pay to [U+202E]gnp.exe", "the override is shown, not obeyed")
	assert.NotContains(t, eval[string](t, ctx, `document.body.innerHTML`), "\u202e")
	shot(t, ctx, "step-bidi")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.steppage dd a[data-select]`)), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="e101000000000000"]`)))
	assert.Equal(t, ui.URL+"/runs/"+id+"?span=e101000000000000", eval[string](t, ctx, `location.href`))
	// The tool call's parent never arrived: named, not a dead link.
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+id+"?span=e103000000000000"), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="e103000000000000"]`)))
	assert.Equal(t, "e109000000000000 (not in the run)", eval[string](t, ctx, `document.querySelector('#panel .missing').textContent`))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#panel a[data-select="e109000000000000"]').length`))

	// 768 px: no page is wider than the window.
	for _, path := range []string{"/", "/runs/" + id + "?span=e102000000000000", "/runs/" + id + "/steps/1"} {
		do(t, ctx, chromedp.EmulateViewport(768, 1000), chromedp.Navigate(ui.URL+path), chromedp.WaitVisible(chromedp.CSS(`main`)))
		assert.LessOrEqual(t, eval[int](t, ctx, `document.documentElement.scrollWidth`), 768, "%s at 768 px", path)
	}
	shot(t, ctx, "run-768")
	assert.Empty(t, dlg.opened())
}
