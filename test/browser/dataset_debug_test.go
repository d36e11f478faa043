// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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

// TestDatasetFromRunPage adds a run to a dataset from its run page (a CSRF-protected POST),
// records a failing test run of the case followed by 210 newer runs, and checks that the
// version page still finds the test run, links its FAIL to a diff that differs, and that the
// test run links back to its case; a POST without the form token, from another site, or (with
// --token) without the bearer token is refused.
func TestDatasetFromRunPage(t *testing.T) {
	ctx, dlg := tab(t)
	caseRun := pcommon.TraceID{0x72, 0x75, 0x6e, 0xd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xd1}
	now := time.Now().UTC().Truncate(time.Second)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, writeOTLP(t, "case.json", turnRun(caseRun, now.Add(-time.Hour), "orders-1", "What is my order status?", "Your order ships today.", "", time.Second)))
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	ui := startUI(t, c)

	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+caseRun.String()), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready]`)),
		chromedp.Click(chromedp.CSS(`#adddataset summary`)),
		chromedp.SendKeys(chromedp.CSS(`#adddataset input[name=name]`), "orders"),
		chromedp.SendKeys(chromedp.CSS(`#adddataset input[name=case]`), "status"),
		chromedp.SendKeys(chromedp.CSS(`#adddataset textarea[name=expect]`), "output~ships"))
	shot(t, ctx, "run-add-to-dataset")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#adddataset button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#cases tr[data-case="status"]`)))
	path := eval[string](t, ctx, `location.pathname`)
	require.True(t, strings.HasPrefix(path, "/datasets/orders/"), path)
	version := strings.TrimPrefix(path, "/datasets/orders/")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#case-status .expect').textContent`), `output contains "ships"`)

	// A failing test run of the case, then 210 newer runs.
	testRun := pcommon.TraceID{0x72, 0x75, 0x6e, 0xd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xd2}
	td := turnRun(testRun, now.Add(time.Minute), "orders-2", "What is my order status?", "I do not know.", "", time.Second)
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	root.PutStr("runagain.test.dataset", "orders")
	root.PutStr("runagain.test.dataset.version", version)
	root.PutStr("runagain.test.case", "status")
	load := ptrace.NewTraces()
	for i := 0; i < 210; i++ {
		f := turnRun(pcommon.TraceID{0x6c, 0x6f, 0x61, 0x64, byte(i >> 8), byte(i)}, now.Add(2*time.Minute+time.Duration(i)*time.Second), "", "hello", "hi", "", 50*time.Millisecond)
		f.ResourceSpans().MoveAndAppendTo(load.ResourceSpans())
	}
	importRuns(t, c, 212, writeOTLP(t, "test.json", td), writeOTLP(t, "load.json", load))

	do(t, ctx, chromedp.Navigate(ui.URL+path), chromedp.WaitVisible(chromedp.CSS(`#case-status .lasttest`)))
	assert.Equal(t, "fail", eval[string](t, ctx, `document.querySelector('#case-status .lasttest .badge').textContent`), "found past the 200 newest runs")
	href := eval[string](t, ctx, `document.querySelector('#case-status a[data-difflink]').getAttribute('href')`)
	assert.Contains(t, href, "#pair-")
	shot(t, ctx, "dataset-fail")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#case-status a[data-difflink]`)), chromedp.WaitVisible(chromedp.CSS(`#diffgrid`)))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#identical').length`), "the diff of a FAIL differs")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#first-difference-text').textContent`), "output differs")

	// The test run links back to its case.
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+testRun.String()), chromedp.WaitVisible(chromedp.CSS(`#testof a`)),
		chromedp.Click(chromedp.CSS(`#testof a`)), chromedp.WaitVisible(chromedp.CSS(`#case-status`)))
	assert.Equal(t, ui.URL+path+"#case-status", eval[string](t, ctx, `location.href`))

	// Refused: no form token; another site's request; with --token, no bearer token.
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+caseRun.String()), chromedp.WaitReady(chromedp.CSS(`#adddataset input[name=csrf]`)))
	csrf := eval[string](t, ctx, `document.querySelector('#adddataset input[name=csrf]').value`)
	require.Len(t, csrf, 64)
	post := func(base string, form url.Values, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/runs/"+caseRun.String()+"/dataset", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	form := url.Values{"name": {"orders"}, "case": {"again"}}
	assert.Equal(t, http.StatusForbidden, post(ui.URL, form, nil), "no csrf token")
	form.Set("csrf", csrf)
	assert.Equal(t, http.StatusForbidden, post(ui.URL, form, map[string]string{"Sec-Fetch-Site": "cross-site"}), "from another site")
	assert.Equal(t, http.StatusSeeOther, post(ui.URL, form, map[string]string{"Sec-Fetch-Site": "same-origin"}), "the page's own form")

	tui := startUI(t, c, "--token-file", tokenFile)
	assert.Equal(t, http.StatusUnauthorized, post(tui.URL, form, nil), "no bearer token")
	assert.Equal(t, http.StatusForbidden, post(tui.URL, url.Values{"name": {"orders"}}, map[string]string{"Authorization": "Bearer s3cret"}), "bearer but no csrf token")
	assert.Empty(t, dlg.opened())
}
