// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/ui"
)

// spanAt is the i-th span of a benchRun (0 is the agent span).
func spanAt(run ptrace.Traces, i int) ptrace.Span {
	return run.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(i)
}

// TestFindInLargeRun opens a 10,000-span run whose only failing span is number 7777 and whose
// span 4242 alone holds the word "zanzibar" in a tool result, and finds them: the header's error
// count jumps to the failing span, so does the e key, the errors chip leaves one row, the
// server-side search finds the payload, the waterfall folds per node and by depth with child
// counts and durations on the rows, and the name column is resized by dragging.
func TestFindInLargeRun(t *testing.T) {
	ctx, dlg := tab(t)
	big, _ := benchRun(4, 10000, 0)
	failing := spanAt(big.Traces, 7777)
	failing.Status().SetCode(ptrace.StatusCodeError)
	failing.Status().SetMessage("weather API timed out")
	needle := spanAt(big.Traces, 4242)
	needle.Attributes().PutStr("gen_ai.tool.call.result", `{"city":"Zanzibar","sky":"clear"}`)
	srv, err := ui.New(ui.Options{Reader: memReader{big.TraceID: big}})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	failID, needleID := failing.SpanID().String(), needle.SpanID().String()

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+big.TraceID), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	assert.Equal(t, "1", eval[string](t, ctx, `document.querySelector('a[data-jump=error]').textContent`))
	do(t, ctx, chromedp.Click(chromedp.CSS(`a[data-jump=error]`)), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+failID+`"]`)))
	assert.Equal(t, ts.URL+"/runs/"+big.TraceID+"?span="+failID, eval[string](t, ctx, `location.href`))
	assert.Equal(t, failID, eval[string](t, ctx, `document.querySelector('#canvas .row.sel').dataset.span`), "the failing row is drawn and selected")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel .status').textContent`), "weather API timed out")
	shot(t, ctx, "run-jump-error")

	// The e key from the top of the run lands on it too.
	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+big.TraceID+"?span="+spanAt(big.Traces, 1).SpanID().String()),
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row.sel`)),
		chromedp.KeyEvent("e"), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+failID+`"]`)))

	// The errors chip shows only the failing span.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#findbar .chip[data-kind=error]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-found="1"]`)))
	assert.Equal(t, []string{failID}, eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row')].map(r => r.dataset.span)`))
	assert.Equal(t, "1 of 10000 spans", eval[string](t, ctx, `document.querySelector('#findcount').textContent`))
	do(t, ctx, chromedp.Click(chromedp.CSS(`#findbar .chip[data-kind=error]`)), chromedp.WaitNotPresent(chromedp.CSS(`#timeline[data-found]`)))
	assert.Equal(t, "10000", eval[string](t, ctx, `document.querySelector('#timeline').dataset.shown`))

	// Text search on the server, payloads included; n selects the match.
	// The matching row's page may still be on its way from the server when data-found is set.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#find`), "ZANZIBAR"+kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-found="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#canvas .row[data-span="`+needleID+`"]`)))
	assert.Equal(t, []string{needleID}, eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row')].map(r => r.dataset.span)`))
	do(t, ctx, chromedp.Click(chromedp.CSS(`#findbar button.nav[data-step="1"]`)), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+needleID+`"]`)))
	shot(t, ctx, "run-search")
	eval[bool](t, ctx, `(document.getElementById('find').value = '', true)`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#find`), kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(`#timeline[data-found]`)))

	// Folding: the agent span has 9,999 children; folding it leaves one row, unfolding all.
	assert.Equal(t, "invoke_agent bench (9999)", eval[string](t, ctx, `document.querySelector('#canvas .row[data-i="0"] .name').textContent.replace(/^\W+agent/, '')`))
	assert.Equal(t, "8ms", eval[string](t, ctx, `document.querySelector('#canvas .row[data-i="1"] .dur').textContent`), "durations on the rows")
	eval[bool](t, ctx, `(document.getElementById('viewport').scrollTop = 0, true)`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#canvas .row[data-i="0"] [data-fold]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-shown="1"]`)))
	do(t, ctx, chromedp.Click(chromedp.CSS(`#canvas .row[data-i="0"] [data-fold]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-shown="10000"]`)))
	depth := func(v, shown string) {
		eval[bool](t, ctx, `(d => (d.value = '`+v+`', d.dispatchEvent(new Event('change'))))(document.getElementById('depth'))`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#timeline[data-shown="`+shown+`"]`)))
	}
	depth("1", "1")
	depth("", "10000")

	// Dragging the grip widens the name column.
	before := eval[float64](t, ctx, `document.querySelector('#canvas .row .name').getBoundingClientRect().width`)
	box := eval[[]float64](t, ctx, `(r => [r.left + r.width / 2, r.top + 40])(document.getElementById('colgrip').getBoundingClientRect())`)
	do(t, ctx, chromedp.MouseEvent(chromedp.MousePressed, box[0], box[1], chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, box[0]+75, box[1], chromedp.ButtonType(input.MouseButtonLeft)),
		chromedp.MouseEvent(chromedp.MouseMoved, box[0]+150, box[1], chromedp.ButtonType(input.MouseButtonLeft)),
		chromedp.MouseEvent(chromedp.MouseReleased, box[0]+150, box[1], chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)))
	after := eval[float64](t, ctx, `document.querySelector('#canvas .row .name').getBoundingClientRect().width`)
	assert.InDelta(t, before+150, after, 20, "the name column follows the grip")
	shot(t, ctx, "run-folded-resized")
	assert.Empty(t, dlg.opened())
}
