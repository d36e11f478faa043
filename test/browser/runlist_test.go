// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestRunListAndSessionPage imports three turns of one conversation (trace ids sharing 30 of
// their 32 characters) and a failed run of another: the list names each run, previews its first
// input and its answer or error, shows ids that tell them apart, sorts, searches and shows local
// time with UTC on hover; the session page lists the turns in order with input and answer.
func TestRunListAndSessionPage(t *testing.T) {
	ctx, dlg := tab(t)
	id := func(last byte) pcommon.TraceID {
		return pcommon.TraceID{0x72, 0x75, 0x6e, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, 0xc, last}
	}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	turns := []struct {
		in, out string
		d       time.Duration
	}{{"What is my order status?", "Your order ships today.", 900 * time.Millisecond},
		{"Can I change the address?", "Yes, until it ships.", 2500 * time.Millisecond},
		{"Change it to Main Street 5.", "Done: Main Street 5.", 1200 * time.Millisecond}}
	var files []string
	for i, tr := range turns {
		files = append(files, writeOTLP(t, "turn.json", turnRun(id(byte(i+1)), t0.Add(time.Duration(i)*time.Minute), "conv-42", tr.in, tr.out, "", tr.d)))
	}
	files = append(files, writeOTLP(t, "fail.json", turnRun(id(0x10), t0.Add(10*time.Minute), "conv-7", "Refund please", "", "rate limited by upstream (429)", 300*time.Millisecond)))
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 4, files...)
	ui := startUI(t, c)

	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	type row struct {
		Trace, Name, ID, In, Out string
		Failed                   bool
	}
	rows := func() []row {
		return eval[[]row](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => ({Trace: r.dataset.trace,
			Name: r.querySelector('.runname').textContent, ID: r.querySelector('.id').textContent,
			In: (r.querySelector('.preview.in') || {}).textContent || '', Out: (r.querySelector('.preview.out') || {}).textContent || '',
			Failed: !!r.querySelector('.preview.failed')}))`)
	}
	got := rows()
	require.Len(t, got, 4)
	assert.Equal(t, row{Trace: id(0x10).String(), Name: "invoke_agent support", ID: id(0x10).String()[:31],
		In: "▸ Refund please", Out: "✖ chat gpt-4o: rate limited by upstream (429)", Failed: true}, got[0])
	assert.Equal(t, row{Trace: id(3).String(), Name: "invoke_agent support", ID: id(3).String()[:32],
		In: "▸ Change it to Main Street 5.", Out: "◂ Done: Main Street 5."}, got[1])
	ids := map[string]bool{}
	for _, r := range got {
		ids[r.ID] = true
	}
	assert.Len(t, ids, 4, "the ids shown tell the runs apart")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#runs tbody time').title`), "2026-11-30 09:10:00 UTC")
	assert.Equal(t, "1", eval[string](t, ctx, `document.querySelector('#runs tbody time').dataset.local`), "shown in local time")
	shot(t, ctx, "sessions-list")

	// Sort by duration, longest first; click again for shortest first.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs thead a[data-sort=duration]`)), chromedp.WaitVisible(chromedp.CSS(`#runs thead a.sorted`)))
	var order []string
	for _, r := range rows() {
		order = append(order, r.Trace)
	}
	assert.Equal(t, []string{id(2).String(), id(3).String(), id(1).String(), id(0x10).String()}, order)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs thead a[data-sort=duration]`)), chromedp.WaitVisible(chromedp.CSS(`#runs thead a.sorted.asc`)))
	assert.Equal(t, id(0x10).String(), rows()[0].Trace)

	// Free-text search over the previews.
	do(t, ctx, chromedp.Navigate(ui.URL+"/?q=main+street"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	assert.Equal(t, []string{id(3).String()}, eval[[]string](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.trace)`))

	// The session page: the turns of conv-42 in order, each input and answer.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs tbody a.sess`)), chromedp.WaitVisible(chromedp.CSS(`#turns .turn`)))
	assert.Equal(t, ui.URL+"/sessions/conv-42", eval[string](t, ctx, `location.href`))
	type turn struct{ Trace, In, Out string }
	gotTurns := eval[[]turn](t, ctx, `[...document.querySelectorAll('#turns .turn')].map(e => ({Trace: e.dataset.trace,
		In: e.querySelector('[data-role=input] pre').textContent, Out: e.querySelector('[data-role=answer] pre').textContent}))`)
	var want []turn
	for i, tr := range turns {
		want = append(want, turn{id(byte(i + 1)).String(), tr.in, tr.out})
	}
	assert.Equal(t, want, gotTurns, "the turns in order, each input and answer")
	shot(t, ctx, "session-page")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#turns .turn:nth-child(2) a[href^="/runs/"]`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready]`)))
	assert.Equal(t, ui.URL+"/runs/"+id(2).String(), eval[string](t, ctx, `location.href`))
	assert.Empty(t, dlg.opened())
}
