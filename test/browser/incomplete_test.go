// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestIncompleteRunInBrowser imports a run still being recorded (a tool call not finished, its
// parent not received): the page says it is incomplete, draws the unfinished span with a bar and
// "not finished", puts a placeholder for the missing parent, gives the duration the list gives,
// and reloads itself to show a span that arrives later.
func TestIncompleteRunInBrowser(t *testing.T) {
	ctx, dlg := tab(t)
	run := pcommon.TraceID{0x72, 0x75, 0x6e, 0xf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf1}
	start := time.Now().Add(-10 * time.Second).UTC()
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, writeOTLP(t, "live.json", brokenRun(run, start, true)))
	ui := startUI(t, c)
	id := run.String()

	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	listDur := eval[string](t, ctx, `document.querySelector('#runs tbody [data-duration]').textContent`)
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+id+"?span=f103000000000000"), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel`)))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#incomplete').textContent`), "1 span not finished")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#incomplete').textContent`), "refreshes every 5 s")
	assert.Equal(t, listDur, eval[string](t, ctx, `[...document.querySelectorAll('.runhead dt')].find(d => d.textContent == 'Duration').nextElementSibling.textContent`),
		"the list and the page give one duration")
	row := `#canvas .row[data-span="f103000000000000"]`
	assert.True(t, eval[bool](t, ctx, `document.querySelector('`+row+`').classList.contains('unfinished')`))
	assert.Equal(t, "…", eval[string](t, ctx, `document.querySelector('`+row+` .dur').textContent`))
	assert.Greater(t, eval[float64](t, ctx, `document.querySelector('`+row+` .bar').getBoundingClientRect().width`), 20.0, "the unfinished span has a bar up to the run's end")
	assert.Equal(t, "not finished", eval[string](t, ctx, `document.querySelector('#panel .unfinished').textContent`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('`+row+` .missingparent').title`), "parent span f109000000000000 never arrived")
	shot(t, ctx, "run-incomplete")

	// A span arrives: the page shows it without being reloaded by hand.
	later := brokenRun(run, start, true)
	spans := later.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.RemoveIf(func(s ptrace.Span) bool { return s.SpanID() != pcommon.SpanID{0xf1, 2} })
	spans.At(0).SetSpanID(pcommon.SpanID{0xf1, 4})
	spans.At(0).SetName("chat gpt-4o again")
	out, errOut, err := c.CLI("import", "--endpoint", c.GRPC, writeOTLP(t, "later.json", later))
	assert.NoError(t, err, "%s %s", out, errOut)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#canvas .row[data-span="f104000000000000"]`)))
	assert.Empty(t, dlg.opened())
}
