// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"io"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPayloadsReadable: a JSON attribute is shown indented with its keys in the recorded order,
// folds, and can be downloaded as the exact recorded bytes; an exception event is shown on the
// span with its type, message and stack.
func TestPayloadsReadable(t *testing.T) {
	ctx, dlg := tab(t)
	run, _ := benchRun(7, 4, 0)
	sp := spanAt(run.Traces, 2)
	const raw = `{"zeta":1,"alpha":{"b":[1,2],"a":"x"}}`
	sp.Attributes().PutStr("app.request", raw)
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "TimeoutError")
	ev.Attributes().PutStr("exception.message", "weather API did not answer in 30 s")
	ev.Attributes().PutStr("exception.stacktrace", "Traceback (most recent call last):\n  File \"tool.py\", line 3")
	ts := serveRun(t, run)
	id := sp.SpanID().String()

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+run.TraceID+"?span="+id), chromedp.WaitVisible(chromedp.CSS(`#panel [data-exception]`)))
	pretty := eval[string](t, ctx, `[...document.querySelectorAll('#panel table.attrs tr')].find(r => r.querySelector('th').textContent.trim() == 'app.request').querySelector('[data-pretty]').textContent`)
	assert.Equal(t, "{\n  \"zeta\": 1,\n  \"alpha\": {\n    \"b\": [\n      1,\n      2\n    ],\n    \"a\": \"x\"\n  }\n}", pretty, "indented, keys in recorded order")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel [data-exception]').textContent`), "TimeoutError")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel [data-exception]').textContent`), "weather API did not answer in 30 s")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#panel [data-exception] pre.stack').textContent`), `File "tool.py", line 3`)
	href := eval[string](t, ctx, `[...document.querySelectorAll('#panel a.download')].map(a => a.getAttribute('href')).find(h => h.includes('app.request'))`)
	resp, err := http.Get(ts.URL + href)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, raw, string(body), "the exact recorded bytes")
	assert.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")
	shot(t, ctx, "panel-payloads")
	assert.Empty(t, dlg.opened())
}
