// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/ui"
)

// listReader is a memReader that also lists its runs (trace-id prefixes are resolved from the list).
type listReader struct{ memReader }

func (l listReader) Runs(context.Context, store.RunFilter) ([]store.RunSummary, error) {
	var out []store.RunSummary
	for id := range l.memReader {
		out = append(out, store.RunSummary{TraceID: id, Tier: store.TierHot})
	}
	return out, nil
}

// TestDiffOfLargeRunsScales diffs two 10,000-span runs that differ in one tool result (span
// 5000): the page folds the identical steps around it into two lines, names the one difference
// with a link, n jumps to it, runs are named by unambiguous trace-id prefixes, and the page stays
// small.
func TestDiffOfLargeRunsScales(t *testing.T) {
	ctx, dlg := tab(t)
	a, _ := benchRun(5, 10000, 0)
	b, _ := benchRun(6, 10000, 0)
	spanAt(b.Traces, 5000).Attributes().PutStr("gen_ai.tool.call.result", `{"temperature":18,"sky":"rain"}`)
	srv, err := ui.New(ui.Options{Reader: listReader{memReader{a.TraceID: a, b.TraceID: b}}})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/diff?a=" + a.TraceID + "&b=" + b.TraceID)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Less(t, len(body), 200<<10, "the diff of two 10,000-span runs is %d bytes of HTML", len(body))

	// Prefixes: "7205" is too short, "720500" names run A alone, "72" is refused.
	do(t, ctx, chromedp.Navigate(ts.URL+"/diff?a=720500&b=720600"), chromedp.WaitVisible(chromedp.CSS(`#diffgrid`)))
	assert.Equal(t, []string{a.TraceID, b.TraceID}, eval[[]string](t, ctx, `[...document.querySelectorAll('form.filters input[name=a], form.filters input[name=b]')].map(i => i.value)`))
	folds := eval[[]int](t, ctx, `[...document.querySelectorAll('#diffgrid .pair.fold')].map(p => +p.dataset.foldTo - +p.dataset.foldFrom + 1)`)
	changed := eval[int](t, ctx, `document.querySelectorAll('#diffgrid .pair.changed').length`)
	assert.Equal(t, 1, changed, "one step differs")
	total := 0
	for _, f := range folds {
		total += f
	}
	assert.Len(t, folds, 2, "the identical steps before and after the difference are folded")
	assert.Equal(t, 9999-1, total, "every identical step of the page is in a fold")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#diffnav').textContent`), "1 of 9999 aligned steps differ")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#diffgrid .pair.changed .cell.detail').textContent`), `tool result differs at sky`)
	eval[bool](t, ctx, `(window.scrollTo(0, 0), true)`)
	do(t, ctx, chromedp.KeyEvent("n"), chromedp.WaitReady(chromedp.CSS(`#diffgrid .pair.changed.current`)))
	assert.True(t, eval[bool](t, ctx, `(r => r.top >= 0 && r.top < innerHeight)(document.querySelector('#diffgrid .pair.current .cell').getBoundingClientRect())`), "n scrolls the difference into view")
	assert.Equal(t, "#pair-4999", eval[string](t, ctx, `location.hash`))
	shot(t, ctx, "diff-10000-folded")
	// Unfolding a run of identical steps draws them (this page's share).
	do(t, ctx, chromedp.Click(chromedp.CSS(`#diffgrid .pair.fold a[data-expand]`)), chromedp.WaitReady(chromedp.CSS(`#diffgrid .pair.same`)))
	assert.Positive(t, eval[int](t, ctx, `document.querySelectorAll('#diffgrid .pair.same').length`))

	resp, err = http.Get(ts.URL + "/diff?a=72&b=" + b.TraceID)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a 2-character prefix is refused")
	assert.Empty(t, dlg.opened())
}
