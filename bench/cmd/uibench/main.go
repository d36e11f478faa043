// SPDX-License-Identifier: Apache-2.0

// Command uibench times the web UI (internal/ui) on a real store, in a real browser: the
// sessions page over 10^5 runs, the run page and the diff page of 10,000-span runs, and a text
// search in a run holding about 100 MB of payloads, against the run page of one loadgen turn
// (8 spans) measured in the same process as the baseline. `make bench-ui` runs it; the table goes
// to BENCHMARKS.md ("runagain ui: pages on a real store").
//
// The store is the embedded default's hot tier (hot.db, internal/store/sqlitestore), written
// directly through WriteTraces with traffic from internal/loadgen (loadgen.Turns: the
// generator `runagain loadgen` sends, offline): -runs traces of one turn each for the sessions
// page; the 10,000-span runs are one long loadgen session's turns under one agent span (a second
// copy with one tool result changed, for the diff); the payload run is the same with 10 KiB
// messages. Each page is timed from navigating a blank tab of headless Chromium until it is
// drawn (run page: the timeline's first rows; sessions: the first row; diff: the grid, or its
// changed pair), over the DevTools protocol; the server keeps no run cached between renders
// (CacheTTL 1 ns), so every render reads the run from SQLite and arranges it afresh. Each figure
// is the median of -reps renders after one warm-up; the machine's load average is printed with
// them.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/ui"
)

func main() {
	dir := flag.String("dir", "", "data directory to build the store in (default: a temporary one, removed after)")
	runs := flag.Int("runs", 100000, "runs (one loadgen turn each) for the sessions page")
	spans := flag.Int("spans", 10000, "spans of the long runs")
	payloadKiB := flag.Int("payload-kib", 10, "message size of the payload run, KiB")
	reps := flag.Int("reps", 5, "renders per page (after one warm-up); the median is reported")
	chromium := flag.String("chromium", "/usr/bin/chromium", "Chromium binary")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server while timing the pages")
	flag.Parse()
	if err := run(*dir, *runs, *spans, *payloadKiB, *reps, *chromium, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "uibench:", err)
		os.Exit(1)
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func traceID(kind byte, i int) pcommon.TraceID {
	id := pcommon.TraceID{0x75, 0x69, kind}
	for b := 0; b < 8; b++ {
		id[15-b] = byte(uint64(i) >> (8 * b))
	}
	return id
}

func newTraces() (ptrace.Traces, ptrace.SpanSlice) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "loadgen-agent")
	return td, rs.ScopeSpans().AppendEmpty().Spans()
}

// writeRuns writes n traces of one loadgen turn each (sessions of 5 turns), in batches.
func writeRuns(ctx context.Context, db *sqlitestore.DB, n int) (int, error) {
	cfg := loadgen.DefaultConfig()
	td, spans := newTraces()
	i, total := 0, 0
	flush := func() error {
		if spans.Len() == 0 {
			return nil
		}
		total += spans.Len()
		_, err := db.WriteTraces(ctx, td)
		td, spans = newTraces()
		return err
	}
	for specs := range loadgen.Turns(cfg, (n+cfg.Turns-1)/cfg.Turns, t0) {
		if i == n {
			break
		}
		tid := traceID(1, i)
		for k := range specs {
			var parent pcommon.SpanID
			if specs[k].Parent >= 0 {
				parent = loadgen.SpanID(specs[k].Parent)
			}
			loadgen.AppendSpan(spans, tid, k, parent, &specs[k])
		}
		i++
		if i%500 == 0 {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	return total, flush()
}

// toolSpan returns the n-th span of td that is a tool call.
func toolSpan(td ptrace.Traces, n int) ptrace.Span {
	var out ptrace.Span
	seen := 0
	store.EachSpan(td, func(s ptrace.Span) {
		if v, ok := s.Attributes().Get("gen_ai.operation.name"); ok && v.Str() == "execute_tool" {
			if seen == n {
				out = s
			}
			seen++
		}
	})
	return out
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

type result struct {
	name   string
	times  []time.Duration
	bytes  int64 // bytes of the page's HTML (server only)
	server time.Duration
}

func run(dir string, nRuns, nSpans, payloadKiB, reps int, chromium, cpuprofile string) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "uibench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Printf("uibench: %d cores, %s, load average %s at start; store in %s\n", runtime.NumCPU(), runtime.Version(), loadavg(), dir)
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	if err != nil {
		return err
	}
	begin := time.Now()
	listed, err := writeRuns(ctx, db, nRuns)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d runs (%d spans) in %s\n", nRuns, listed, time.Since(begin).Round(time.Millisecond))
	small := traceID(1, nRuns-1).String() // a loadgen turn: the baseline
	a, b, heavy := traceID(2, 1), traceID(2, 2), traceID(2, 3)
	tdA, _ := loadgen.LongRun(a, nSpans, 512, t0)
	tdB, _ := loadgen.LongRun(b, nSpans, 512, t0)
	toolSpan(tdB, nSpans/4).Attributes().PutStr("gen_ai.tool.call.result", `{"temperature":18,"sky":"rain"}`)
	tdH, payload := loadgen.LongRun(heavy, nSpans, payloadKiB<<10, t0)
	toolSpan(tdH, nSpans/3).Attributes().PutStr("gen_ai.tool.call.result", `{"note":"needle-in-the-payloads"}`)
	for _, td := range []ptrace.Traces{tdA, tdB, tdH} {
		if _, err := db.WriteTraces(ctx, td); err != nil {
			return err
		}
	}
	if err := db.Close(); err != nil {
		return err
	}
	st, _ := os.Stat(filepath.Join(dir, "hot.db"))
	fmt.Printf("long runs: %d spans each; payload run %.1f MB of attribute values; hot.db %.0f MB\n",
		nSpans, float64(payload)/1e6, float64(st.Size())/1e6)

	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	reader := store.NewTiered(hot)
	defer reader.Close()
	srv, err := ui.New(ui.Options{Reader: reader, CacheTTL: time.Nanosecond})
	if err != nil {
		return err
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1500, 1000)}
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	render := func(path, wait string) (time.Duration, error) {
		if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
			return 0, err
		}
		c, cancel := context.WithTimeout(bctx, 2*time.Minute)
		defer cancel()
		t := time.Now()
		if err := chromedp.Do(c, chromedp.Navigate(ts.URL+path), chromedp.WaitReady(chromedp.CSS(wait))); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		return time.Since(t), nil
	}
	get := func(path string) (time.Duration, int64, error) {
		t := time.Now()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", path, resp.Status)
		}
		return time.Since(t), n, err
	}
	if cpuprofile != "" {
		stop, err := startProfile(cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	pages := []struct{ name, path, wait string }{
		{"run page, one loadgen turn (8 spans; baseline)", "/runs/" + small, `#timeline[data-ready] .row`},
		{fmt.Sprintf("sessions, %d runs (first page)", nRuns), "/", `#runs tbody tr`},
		{fmt.Sprintf("run page, %d spans", nSpans), "/runs/" + a.String(), `#timeline[data-ready] .row`},
		{fmt.Sprintf("diff of a %d-span run with itself", nSpans), "/diff?a=" + a.String() + "&b=" + a.String(), `#diffgrid .pair`},
		{fmt.Sprintf("diff of two %d-span runs differing in one tool result", nSpans), "/diff?a=" + a.String() + "&b=" + b.String(), `#diffgrid .pair.changed`},
	}
	var results []result
	for _, p := range pages {
		r := result{name: p.name}
		if _, err := render(p.path, p.wait); err != nil { // warm-up
			return err
		}
		for i := 0; i < reps; i++ {
			d, err := render(p.path, p.wait)
			if err != nil {
				return err
			}
			r.times = append(r.times, d)
		}
		var sv []time.Duration
		for i := 0; i < reps; i++ {
			d, n, err := get(p.path)
			if err != nil {
				return err
			}
			sv, r.bytes = append(sv, d), n
		}
		r.server = median(sv)
		results = append(results, r)
		fmt.Printf("  %-60s %8.0f ms (server %6.0f ms, %d bytes) %v\n", p.name, ms(median(r.times)), ms(r.server), r.bytes, r.times)
	}
	find := result{name: fmt.Sprintf("search in a %d-span run with %.0f MB of payloads (server, run read each time)", nSpans, float64(payload)/1e6)}
	q := "/api/runs/" + heavy.String() + "/find?q=needle-in-the-payloads"
	if _, _, err := get(q); err != nil {
		return err
	}
	for i := 0; i < reps; i++ {
		d, n, err := get(q)
		if err != nil {
			return err
		}
		find.times, find.bytes = append(find.times, d), n
	}
	fmt.Printf("  %-60s %8.0f ms %v\n", find.name, ms(median(find.times)), find.times)
	cached, err := ui.New(ui.Options{Reader: reader})
	if err != nil {
		return err
	}
	defer cached.Close()
	cts := httptest.NewServer(cached)
	defer cts.Close()
	again := result{name: "the same search again, run cached (server)"}
	if resp, err := http.Get(cts.URL + q); err != nil {
		return err
	} else {
		resp.Body.Close()
	}
	for i := 0; i < reps; i++ {
		t := time.Now()
		resp, err := http.Get(cts.URL + q)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		again.times = append(again.times, time.Since(t))
	}
	fmt.Printf("  %-60s %8.0f ms %v\n", again.name, ms(median(again.times)), again.times)

	base := median(results[0].times)
	fmt.Printf("\nload average %s at end\n\n", loadavg())
	fmt.Println("| page | ms (median of", reps, ") | × baseline | server ms | HTML bytes |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, r := range results {
		m := median(r.times)
		fmt.Printf("| %s | %.0f | %.2f | %.0f | %d |\n", r.name, ms(m), float64(m)/float64(base), ms(r.server), r.bytes)
	}
	for _, r := range []result{find, again} {
		fmt.Printf("| %s | %.0f | – | – | – |\n", r.name, ms(median(r.times)))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
