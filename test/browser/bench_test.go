// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/ui"
)

// memReader is a store.Reader over runs held in memory (the benchmark measures the UI, not the store).
type memReader map[string]*store.Run

func (m memReader) Runs(context.Context, store.RunFilter) ([]store.RunSummary, error) {
	return nil, nil
}
func (m memReader) Close() error { return nil }
func (m memReader) Run(_ context.Context, id string) (*store.Run, error) {
	if r, ok := m[id]; ok {
		return r, nil
	}
	return nil, store.ErrNotFound
}

// benchRun is an agent run of n spans: an agent span over LLM calls (one in three) and tool
// calls; the first LLM call's user message is msgBytes long, the others a short question.
func benchRun(id byte, n, msgBytes int) (*store.Run, string) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	tid := pcommon.TraceID{0x72, id}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	root := spans.AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(pcommon.SpanID{id, 0xff})
	root.SetName("invoke_agent bench")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(n) * 10 * time.Millisecond)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	firstLLM := ""
	for i := 1; i < n; i++ {
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{id, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)})
		s.SetParentSpanID(root.SpanID())
		st := start.Add(time.Duration(i) * 10 * time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(st))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(st.Add(8 * time.Millisecond)))
		a := s.Attributes()
		if i%3 == 1 {
			s.SetName("chat gpt-4o")
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4o")
			a.PutInt("gen_ai.usage.input_tokens", 1200)
			a.PutInt("gen_ai.usage.output_tokens", 80)
			msg := "What is the weather in Paris?"
			if firstLLM == "" {
				firstLLM = s.SpanID().String()
				if msgBytes > 0 {
					msg = strings.Repeat("All work and no play makes Jack a dull boy. ", msgBytes/44+1)[:msgBytes]
				}
			}
			a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"`+msg+`"}]}]`)
			a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"weather","arguments":{"city":"Paris"}}],"finish_reason":"tool_call"}]`)
		} else {
			s.SetName("execute_tool weather")
			a.PutStr("gen_ai.operation.name", "execute_tool")
			a.PutStr("gen_ai.tool.name", "weather")
			a.PutStr("gen_ai.tool.call.arguments", `{"city":"Paris"}`)
			a.PutStr("gen_ai.tool.call.result", `{"temperature":18,"sky":"clear"}`)
		}
	}
	return &store.Run{TraceID: tid.String(), Traces: td, Logs: plog.NewLogs(), Tier: store.TierHot}, firstLLM
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	return w.ResponseWriter.Write(b)
}

// BenchmarkRunPageFirstRender measures, in the shared Chromium, the time from navigating to a
// run page until its timeline has drawn its first rows (and, with a selected span, its panel is
// in the page), and the bytes the server sent for it (page, script, style and row pages), for:
// a 10-span run (the baseline), a 10,000-span run, and a run whose first LLM call holds a 3 MB
// message, opened on that call. Each iteration reads and arranges the run afresh (no cache).
// Metrics: ms/render, bytes/render, and x-baseline (render time over the 10-span run's, measured
// in the same run). Results: BENCHMARKS.md "runagain ui".
func BenchmarkRunPageFirstRender(b *testing.B) {
	if browserErr != nil {
		b.Skip(browserErr)
	}
	small, _ := benchRun(1, 10, 0)
	big, _ := benchRun(2, 10000, 0)
	huge, hugeSpan := benchRun(3, 10, 3<<20)
	srv, err := ui.New(ui.Options{Reader: memReader{small.TraceID: small, big.TraceID: big, huge.TraceID: huge}, CacheTTL: time.Nanosecond})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var sent atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(countingWriter{w, &sent}, r)
	}))
	defer ts.Close()
	ctx, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		b.Fatal(err)
	}
	render := func(b *testing.B, path, wait string) (time.Duration, int64) {
		// A blank page first, so nothing of the previous render is cached in the tab's state.
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		sent.Store(0)
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+path), chromedp.WaitVisible(chromedp.CSS(wait))); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), sent.Load()
	}
	var baseline time.Duration
	for _, c := range []struct {
		name, path, wait string
	}{
		{"spans=10", "/runs/" + small.TraceID, `#timeline[data-ready] .row`},
		{"spans=10000", "/runs/" + big.TraceID, `#timeline[data-ready] .row`},
		{"message=3MB", "/runs/" + huge.TraceID + "?span=" + hugeSpan, `#timeline[data-ready] .row[data-step="1"].sel`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			var bytes int64
			for b.Loop() {
				d, n := render(b, c.path, c.wait)
				total += d
				bytes += n
			}
			per := total / time.Duration(b.N)
			if c.name == "spans=10" {
				baseline = per
			}
			b.ReportMetric(float64(per)/1e6, "ms/render")
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/render")
			if baseline > 0 {
				b.ReportMetric(float64(per)/float64(baseline), "x-baseline")
			}
			b.Logf("%s: %s per first render, %d bytes sent", c.name, per, bytes/int64(b.N))
		})
	}
}

// TestLargeRunStaysLight opens a 10,000-span run and a run holding a 3 MB message in the browser
// (served in-process from memory): the page holds a few dozen timeline rows at a time, scrolling
// to the end fetches the rows there from the server in pages, and the 3 MB message is sent only
// when asked for ("load all"), whole.
func TestLargeRunStaysLight(t *testing.T) {
	ctx, _ := tab(t)
	big, _ := benchRun(2, 10000, 0)
	huge, hugeSpan := benchRun(3, 10, 3<<20)
	srv, err := ui.New(ui.Options{Reader: memReader{big.TraceID: big, huge.TraceID: huge}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var sent atomic.Int64
	var rowPages atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/runs/") {
			rowPages.Add(1)
		}
		srv.ServeHTTP(countingWriter{w, &sent}, r)
	}))
	defer ts.Close()

	do(t, ctx, chromedp.Navigate(ts.URL+"/runs/"+big.TraceID), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	inDOM := eval[int](t, ctx, `document.querySelectorAll('#canvas .row').length`)
	if inDOM < 20 || inDOM > 200 {
		t.Errorf("%d timeline rows in the DOM for a 10,000-span run; want a window of a few dozen", inDOM)
	}
	if n := rowPages.Load(); n != 0 {
		t.Errorf("%d row pages fetched before scrolling; the first rows come with the page", n)
	}
	do(t, ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(v => { v.scrollTop = v.scrollHeight; return true })(document.getElementById('viewport'))`))
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS(`#canvas .row[data-i="9999"]`)))
	if n := rowPages.Load(); n < 1 || n > 2 {
		t.Errorf("%d row pages fetched to show the end of the run; want the last one or two", n)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('#canvas .row').length`); got > 200 {
		t.Errorf("%d rows in the DOM after scrolling", got)
	}
	shot(t, ctx, "run-10000-spans")

	sent.Store(0)
	do(t, ctx,
		chromedp.Navigate(ts.URL+"/runs/"+huge.TraceID+"?span="+hugeSpan),
		chromedp.WaitVisible(chromedp.CSS(`#panel [data-messages=input] button[data-load]`)))
	if n := sent.Load(); n > 200<<10 {
		t.Errorf("the page of a run with a 3 MB message sent %d bytes before asking for it", n)
	}
	shown := eval[int](t, ctx, `document.querySelector('#panel [data-messages=input] pre.text').textContent.length`)
	if shown >= 3<<20 {
		t.Errorf("the whole message is in the page before asking: %d bytes", shown)
	}
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`#panel [data-messages=input] button[data-load]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#panel [data-messages=input] button[data-load]`)))
	if got := eval[int](t, ctx, `document.querySelector('#panel [data-messages=input] pre.text').textContent.length`); got != 3<<20 {
		t.Errorf("after load all the message has %d characters, want %d", got, 3<<20)
	}
}
