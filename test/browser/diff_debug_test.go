// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestDiffNamesRerunChange imports a proxied run and its rerun with --set model=gpt-4.1 (the
// upstream answered as gpt-4o-mini both times) and checks that the diff page says first what
// the rerun changed, and names the model asked for on both sides, as `runagain diff --json` does.
func TestDiffNamesRerunChange(t *testing.T) {
	ctx, dlg := tab(t)
	orig := pcommon.TraceID{0x72, 0x75, 0x6e, 0xa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa1}
	rerun := pcommon.TraceID{0x72, 0x75, 0x6e, 0xb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb1}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	fa := writeOTLP(t, "orig.json", proxiedRun(orig, t0, "gpt-4o-mini", nil))
	fb := writeOTLP(t, "rerun.json", proxiedRun(rerun, t0.Add(time.Minute), "gpt-4.1", func(a pcommon.Map) {
		a.PutStr("runagain.rerun.original_trace_id", orig.String())
		a.PutEmptySlice("runagain.rerun.changes").AppendEmpty().SetStr("model=gpt-4.1")
	}))
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 2, fa, fb)
	ui := startUI(t, c)

	out, errOut, err := c.CLI("diff", "--json", orig.String(), rerun.String())
	require.NoError(t, err, errOut)
	var res struct {
		Changes []string `json:"changes"`
		Pairs   []struct {
			A, B struct {
				Model   string            `json:"model"`
				Request map[string]string `json:"request"`
			}
		} `json:"pairs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, []string{"model=gpt-4.1"}, res.Changes)
	require.Len(t, res.Pairs, 1)
	assert.Equal(t, "gpt-4o-mini", res.Pairs[0].A.Request["model"])
	assert.Equal(t, "gpt-4.1", res.Pairs[0].B.Request["model"])
	txt, _, err := c.CLI("diff", orig.String(), rerun.String())
	require.NoError(t, err)
	assert.Contains(t, txt, "b is a rerun of a with: model=gpt-4.1\n")

	// Compare from the sessions list: tick both runs; the older one is A.
	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)),
		chromedp.Click(chromedp.CSS(`#runs tr[data-trace="`+orig.String()+`"] input[name=run]`)),
		chromedp.Click(chromedp.CSS(`#runs tr[data-trace="`+rerun.String()+`"] input[name=run]`)),
		chromedp.Click(chromedp.CSS(`#compare-btn`)),
		chromedp.WaitVisible(chromedp.CSS(`#diffgrid`)))
	assert.Equal(t, ui.URL+"/diff?a="+orig.String()+"&b="+rerun.String(), eval[string](t, ctx, `location.href`))
	assert.Equal(t, "Changed on purpose: b is a rerun of a with: model=gpt-4.1", eval[string](t, ctx, `document.querySelector('#changes').textContent`))
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#changes').compareDocumentPosition(document.querySelector('#first-difference-text')) == Node.DOCUMENT_POSITION_FOLLOWING`),
		"the changes come before the first difference")
	assert.Equal(t, []string{"gpt-4o-mini", "gpt-4.1"}, eval[[]string](t, ctx, `[...document.querySelectorAll('.pair.first [data-request-model]')].map(e => e.dataset.requestModel)`),
		"the model asked for, on both sides")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('.pair.first .cell.b .request').textContent`), "temperature 0.2 · max tokens 256 · tool choice auto · tools get_weather")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#first-difference-text').textContent`), "request model gpt-4o-mini -> gpt-4.1")
	shot(t, ctx, "diff-rerun-changes")
	assert.Empty(t, dlg.opened())
}
