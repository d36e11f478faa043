// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/ui"
)

// manyRuns is a store.Reader listing n runs (newest first, one a minute) whose every run is the
// same small 10-span run: the sessions page's cost at 10^5 runs, not the store's.
type manyRuns struct {
	sums  []store.RunSummary
	small *store.Run
	runs  memReader
}

func newManyRuns(n int, extra memReader) *manyRuns {
	small, _ := benchRun(9, 10, 0)
	m := &manyRuns{small: small, runs: extra}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("72%030x", n-i)
		m.sums = append(m.sums, store.RunSummary{TraceID: id, SessionID: id, Start: t0.Add(-time.Duration(i) * time.Minute),
			End: t0.Add(-time.Duration(i)*time.Minute + 90*time.Millisecond), Spans: 10, Tier: store.TierHot, Models: []string{"gpt-4o"}})
	}
	for id := range extra {
		m.sums = append(m.sums, store.RunSummary{TraceID: id, SessionID: id, Tier: store.TierHot})
	}
	return m
}

func (m *manyRuns) Runs(_ context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	if f.Limit > 0 && f.Limit < len(m.sums) {
		return m.sums[:f.Limit], nil
	}
	return m.sums, nil
}
func (m *manyRuns) Close() error { return nil }
func (m *manyRuns) Run(ctx context.Context, id string) (*store.Run, error) {
	if r, err := m.runs.Run(ctx, id); err == nil {
		return r, nil
	}
	r := *m.small
	r.TraceID = id
	return &r, nil
}

// BenchmarkDebugPages measures, in the shared Chromium, from navigating a blank tab until the page
// is drawn: the sessions page over 10^5 runs, the run page of a 10,000-span run, the diff of a
// 10,000-span run with itself and with a copy that differs in one step; and on the server alone
// (no browser) a text search in a 10,000-span run holding 100 MB of payloads (10 KB a span),
// first (payloads read) and again (cached). The baseline is the run page of a 10-span run,
// measured in the same run. Results: BENCHMARKS.md "runagain ui: finding the step that broke".
func BenchmarkDebugPages(b *testing.B) {
	if browserErr != nil {
		b.Skip(browserErr)
	}
	small, _ := benchRun(1, 10, 0)
	big, _ := benchRun(2, 10000, 0)
	other, _ := benchRun(3, 10000, 0)
	spanAt(other.Traces, 5000).Attributes().PutStr("gen_ai.tool.call.result", `{"temperature":18,"sky":"rain"}`)
	heavy, _ := benchRun(4, 10000, 0)
	pad := strings.Repeat("lorem ipsum dolor sit amet ", 10<<10/27+1)[:10<<10]
	for i := 1; i < 10000; i++ {
		spanAt(heavy.Traces, i).Attributes().PutStr("app.payload", pad)
	}
	spanAt(heavy.Traces, 9876).Attributes().PutStr("app.payload", pad[:5000]+"needle-in-100MB"+pad[5000:])
	reader := newManyRuns(100000, memReader{small.TraceID: small, big.TraceID: big, other.TraceID: other, heavy.TraceID: heavy})
	srv, err := ui.New(ui.Options{Reader: reader, CacheTTL: time.Nanosecond})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		b.Fatal(err)
	}
	render := func(b *testing.B, path, wait string) time.Duration {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+path), chromedp.WaitReady(chromedp.CSS(wait))); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var baseline time.Duration
	for _, c := range []struct{ name, path, wait string }{
		{"run/spans=10", "/runs/" + small.TraceID, `#timeline[data-ready] .row`},
		{"sessions/runs=100000", "/", `#runs tbody tr`},
		{"run/spans=10000", "/runs/" + big.TraceID, `#timeline[data-ready] .row`},
		{"diff/same/spans=10000", "/diff?a=" + big.TraceID + "&b=" + big.TraceID, `#diffgrid .pair`},
		{"diff/one-step/spans=10000", "/diff?a=" + big.TraceID + "&b=" + other.TraceID, `#diffgrid .pair.changed`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += render(b, c.path, c.wait)
			}
			per := total / time.Duration(b.N)
			if baseline == 0 {
				baseline = per
			}
			b.ReportMetric(float64(per)/1e6, "ms/page")
			b.ReportMetric(float64(per)/float64(baseline), "x-baseline")
		})
	}
	b.Run("find/payloads=100MB", func(b *testing.B) {
		srv2, err := ui.New(ui.Options{Reader: reader}) // cached after the first read
		if err != nil {
			b.Fatal(err)
		}
		defer srv2.Close()
		h := httptest.NewServer(srv2)
		defer h.Close()
		get := func() time.Duration {
			t0 := time.Now()
			resp, err := http.Get(h.URL + "/api/runs/" + heavy.TraceID + "/find?q=needle-in-100mb")
			if err != nil || resp.StatusCode != 200 {
				b.Fatal(err, resp)
			}
			resp.Body.Close()
			return time.Since(t0)
		}
		first := get()
		var total time.Duration
		for b.Loop() {
			total += get()
		}
		b.ReportMetric(float64(first)/1e6, "ms/first-search")
		b.ReportMetric(float64(total)/float64(b.N)/1e6, "ms/search")
	})
}
