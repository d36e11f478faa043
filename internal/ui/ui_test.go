// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
)

// memReader is a store.Reader over runs held in memory.
type memReader struct{ runs map[string]*store.Run }

func (m *memReader) Runs(_ context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	var out []store.RunSummary
	for id, r := range m.runs {
		c := arrange(r)
		if !f.Since.IsZero() && c.start.Before(f.Since) {
			continue
		}
		out = append(out, store.RunSummary{SessionID: c.session, TraceID: id, Start: c.start, End: c.end, Spans: int64(len(c.rows)), Tier: "hot"})
	}
	// newest first, then trace id
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Start.After(out[i].Start) || out[j].Start.Equal(out[i].Start) && out[j].TraceID < out[i].TraceID {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out, nil
}

func (m *memReader) Run(_ context.Context, id string) (*store.Run, error) {
	r, ok := m.runs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return r, nil
}

func (m *memReader) Close() error { return nil }

// synthRun is a run of n spans under one agent span: every third an LLM call, the others tools.
// msg is the user message of the first LLM call (the others say "hi").
func synthRun(traceByte byte, start time.Time, n int, msg string) *store.Run {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "synth")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	tid := pcommon.TraceID{traceByte, 1}
	root := spans.AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(pcommon.SpanID{traceByte, 0, 0, 0, 0, 0, 0, 1})
	root.SetName("invoke_agent synth")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(n+1) * time.Millisecond)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", fmt.Sprintf("agent-%d", traceByte))
	for i := 1; i < n; i++ {
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{traceByte, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 0, 2})
		s.SetParentSpanID(root.SpanID())
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i+1) * time.Millisecond)))
		if i%3 == 1 {
			s.SetName("chat gpt-4o")
			a := s.Attributes()
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4o")
			a.PutInt("gen_ai.usage.input_tokens", 1000)
			a.PutInt("gen_ai.usage.output_tokens", 100)
			b, _ := jsonString("hi")
			if i == 1 {
				b, _ = jsonString(msg)
			}
			a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":`+b+`}]}]`)
			a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"ok"}],"finish_reason":"stop"}]`)
		} else {
			s.SetName("execute_tool lookup")
			s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
			s.Attributes().PutStr("gen_ai.tool.name", "lookup")
		}
	}
	return &store.Run{TraceID: tid.String(), Traces: td, Logs: plog.NewLogs(), Tier: "hot"}
}

func newTestServer(t testing.TB, runs ...*store.Run) (*Server, *httptest.Server) {
	m := &memReader{runs: map[string]*store.Run{}}
	for _, r := range runs {
		m.runs[r.TraceID] = r
	}
	s, err := New(Options{Reader: m, PageSize: 2})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts
}

func get(t testing.TB, url string) (int, string) {
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7600", "", true},
		{"127.0.0.2:7600", "", true},
		{"[::1]:7600", "", true},
		{"localhost:7600", "", true},
		{"0.0.0.0:7600", "", false},
		{":7600", "", false},
		{"[::]:7600", "", false},
		{"10.0.0.5:7600", "", false},
		{"example.com:7600", "", false},
		{"0.0.0.0:7600", "t", true},
	} {
		err := CheckListen(c.addr, c.token)
		if c.ok {
			assert.NoError(t, err, c.addr)
		} else {
			assert.ErrorContains(t, err, "refusing to listen on "+c.addr, c.addr)
		}
	}
	assert.Error(t, CheckListen("nonsense", ""))
}

func TestWithToken(t *testing.T) {
	h := WithToken(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "page") }), "tok")
	ts := httptest.NewServer(h)
	defer ts.Close()
	code, _ := get(t, ts.URL+"/")
	assert.Equal(t, http.StatusUnauthorized, code)
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	// ?token= sets the cookie and redirects to the URL without it.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(ts.URL + "/runs/x?token=tok&a=1")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/runs/x?a=1", resp.Header.Get("Location"))
	require.Len(t, resp.Cookies(), 1)
	req, _ = http.NewRequest("GET", ts.URL+"/", nil)
	req.AddCookie(resp.Cookies()[0])
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = noFollow.Get(ts.URL + "//evil.example/x?token=tok")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "/evil.example/x", resp.Header.Get("Location"), "never redirected to another host")
	code, _ = get(t, ts.URL+"/?token=wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
}

func TestSessionsPagesAndFilters(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, ts := newTestServer(t, synthRun(1, t0, 4, "a"), synthRun(2, t0.Add(time.Hour), 4, "b"), synthRun(3, t0.Add(2*time.Hour), 4, "c"))
	code, body := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, code)
	// Page size 2: the two newest, then the oldest on page 2.
	assert.Contains(t, body, "1–2 of 3 runs")
	assert.Less(t, strings.Index(body, `data-trace="0301`), strings.Index(body, `data-trace="0201`))
	assert.NotContains(t, body, `data-trace="0101`)
	assert.Contains(t, body, `rel="next"`)
	_, body = get(t, ts.URL+"/?page=2")
	assert.Contains(t, body, `data-trace="0101`)
	assert.Contains(t, body, "3–3 of 3 runs")
	_, body = get(t, ts.URL+"/?agent=agent-2")
	assert.Contains(t, body, "1–1 of 1 runs")
	assert.Contains(t, body, `data-trace="0201`)
	_, body = get(t, ts.URL+"/?until=2026-01-01T00:30")
	assert.Contains(t, body, `data-trace="0101`)
	assert.Contains(t, body, "1–1 of 1 runs")
	_, body = get(t, ts.URL+"/?cost_min=1000")
	assert.Contains(t, body, "No run matches")
	code, body = get(t, ts.URL+"/?since=yesterday-ish")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "since &#34;yesterday-ish&#34;")
	// Hostile numbers: a page past int range or past the end says so (404, never a crash, no
	// "4999901–4999900 of 3"); a cost that is not a finite USD amount is refused; a malformed
	// trace id is a 400.
	for _, p := range []string{"9223372036854775807", "99999999999999999999", "1000001"} {
		code, body = get(t, ts.URL+"/?page="+p)
		assert.Equal(t, http.StatusNotFound, code, "page=%s", p)
		assert.Contains(t, body, "is past the last page: 3 runs match", "page=%s", p)
	}
	code, _ = get(t, ts.URL+"/?page=-5")
	assert.Equal(t, http.StatusOK, code)
	_, body = get(t, ts.URL+"/?page=9223372036854775807")
	assert.NotContains(t, body, `data-trace="0`, "a page past the end lists nothing")
	for _, c := range []string{"NaN", "-1", "+Inf", "1e300", "abc"} {
		code, _ = get(t, ts.URL+"/?cost_min="+c)
		assert.Equal(t, http.StatusBadRequest, code, "cost_min=%s", c)
	}
	// a reversed range is said to be one, not listed as "no run matches"
	code, body = get(t, ts.URL+"/?since=2026-01-02&until=2026-01-01")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "is not before until")
	code, _ = get(t, ts.URL+"/runs/zzz")
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestRowsArePagedAndPanelsLoadOnDemand(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	r := synthRun(7, time.Now(), 2000, big)
	_, ts := newTestServer(t, r)
	code, body := get(t, ts.URL+"/runs/"+r.TraceID)
	require.Equal(t, http.StatusOK, code)
	assert.Less(t, len(body), 200<<10, "the run page carries the first rows only, no payload")
	code, body = get(t, ts.URL+"/api/runs/"+r.TraceID+"/rows?offset=1900&limit=500")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"offset":1900`)
	assert.Contains(t, body, `"total":2000`)
	assert.Equal(t, 100, strings.Count(body, `"i":`))
	// The LLM call's panel carries the first inlineLimit bytes of the 3 MB message and a link to the rest.
	code, _ = get(t, ts.URL+"/runs/"+r.TraceID+"/spans/0700000000000999/panel")
	assert.Equal(t, http.StatusNotFound, code)
	id := arrange(r).rows[1].SpanID
	code, body = get(t, ts.URL+"/runs/"+r.TraceID+"/spans/"+id+"/panel")
	require.Equal(t, http.StatusOK, code)
	assert.Less(t, len(body), 200<<10)
	assert.Contains(t, body, "load all 3145728 bytes")
	code, body = get(t, ts.URL+"/runs/"+r.TraceID+"/spans/"+id+"/attr?part=in.0.0")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, big, body)
}

func jsonString(s string) (string, error) {
	b := strings.Builder{}
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

func TestDivergencePinnedOnFixture(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := synthRun(9, t0, 4, "hi")
	spans := r.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	fx := spans.AppendEmpty()
	fx.SetTraceID(pcommon.TraceID{9, 1})
	fx.SetSpanID(pcommon.SpanID{9, 9, 9})
	fx.SetParentSpanID(spans.At(0).SpanID())
	fx.SetKind(ptrace.SpanKindClient)
	fx.SetName("POST")
	fx.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(2 * time.Millisecond)))
	fx.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(3 * time.Millisecond)))
	fx.Attributes().PutStr("runagain.fixture.source", "proxy")
	fx.Attributes().PutStr("http.request.method", "POST")
	lr := r.Logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName("runagain.replay.divergence")
	lr.SetTraceID(pcommon.TraceID{9, 1})
	lr.SetSpanID(fx.SpanID())
	lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Hour))) // recorded after the run
	lr.Body().SetStr(`replay diverged: body.messages[1].content expected "a" got "<b>b</b>"`)
	lr.Attributes().PutStr("runagain.replay.divergence.field", "body.messages[1].content")
	_, ts := newTestServer(t, r)

	code, body := get(t, ts.URL+"/api/runs/"+r.TraceID+"/rows")
	require.Equal(t, http.StatusOK, code)
	var rows struct{ Rows []Row }
	require.NoError(t, json.Unmarshal([]byte(body), &rows))
	var pinned []string
	for _, row := range rows.Rows {
		if len(row.Marks) > 0 {
			pinned = append(pinned, row.SpanID+"/"+row.Kind)
			// Recorded after the run: pinned at the end of the exchange it names.
			assert.Equal(t, row.Start+row.Dur, arrange(r).marks[row.Marks[0]].At)
		}
	}
	assert.Equal(t, []string{fx.SpanID().String() + "/http"}, pinned)
	_, body = get(t, ts.URL+"/runs/"+r.TraceID)
	assert.Contains(t, body, "replay diverged at body.messages[1].content")
	assert.Contains(t, body, `got &#34;&lt;b&gt;b&lt;/b&gt;&#34;`, "the message is escaped")
}

func TestDatasetVersionShowsLastTestRun(t *testing.T) {
	ctx := context.Background()
	ds, err := dataset.Open(ctx, "mem://")
	require.NoError(t, err)
	defer ds.Close()
	orig := synthRun(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 4, "hi")
	ok := "ok"
	c, err := dataset.Freeze("", orig.TraceID, orig.Traces, orig.Logs,
		&dataset.CaseExpect{Expect: []dataset.Expectation{{Output: &dataset.OutputExpect{Contains: &ok}}}})
	require.NoError(t, err)
	m, _, err := ds.Put(ctx, "demo", "", []*dataset.Case{c})
	require.NoError(t, err)
	testRun := func(id byte, at time.Time, output string) *store.Run {
		r := synthRun(id, at, 4, "hi")
		spans := r.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		root := spans.At(0).Attributes()
		root.PutStr("runagain.test.dataset", "demo")
		root.PutStr("runagain.test.dataset.version", m.Version)
		root.PutStr("runagain.test.case", c.ID)
		for i := 0; i < spans.Len(); i++ {
			if _, isLLM := spans.At(i).Attributes().Get("gen_ai.output.messages"); isLLM {
				spans.At(i).Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+output+`"}]}]`)
			}
		}
		return r
	}
	passed := testRun(2, m.Created.Add(time.Minute), "ok, done")
	failed := testRun(3, m.Created.Add(2*time.Minute), "no idea")
	rd := &memReader{runs: map[string]*store.Run{orig.TraceID: orig, passed.TraceID: passed, failed.TraceID: failed}}
	s, err := New(Options{Reader: rd, Datasets: ds})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	defer ts.Close()

	code, body := get(t, ts.URL+"/datasets/demo/"+m.Version)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<span class="badge fail">fail</span> <a class="mono" href="/runs/`+failed.TraceID+`">`, "the newest test run")
	assert.Contains(t, body, `output contains &#34;ok&#34;: expected`)
	assert.Contains(t, body, `/diff?a=`+orig.TraceID+`&amp;b=`+failed.TraceID)
	delete(rd.runs, failed.TraceID)
	s.mu.Lock()
	s.runs = map[string]*cachedRun{}
	s.mu.Unlock()
	_, body = get(t, ts.URL+"/datasets/demo/"+m.Version)
	assert.Contains(t, body, `<span class="badge pass">pass</span> <a class="mono" href="/runs/`+passed.TraceID+`">`)
}

// TestDiffFormNamesWhatIsMissing: the diff page with no run is the empty form; with one run, or a
// malformed id, it is a 400 that says why.
func TestDiffFormNamesWhatIsMissing(t *testing.T) {
	r := synthRun(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 4, "a")
	_, ts := newTestServer(t, r)
	code, body := get(t, ts.URL+"/diff")
	assert.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, "give two runs")
	code, body = get(t, ts.URL+"/diff?a=zz&b=")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "give two runs to compare")
	code, body = get(t, ts.URL+"/diff?a=zz&b="+r.TraceID)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "want 32 hex characters")
}

// TestFmtUSD: the UI prints a cost as the CLI does (pricing.FormatUSD), so a run's cost reads the
// same in `runagain show` and on its page (the UI had its own digits: $0.0006 and $1.23 where the
// CLI printed $0.000632 and $1.2340); a priced run below $0.0001 (an imported Gemini 2.0 Flash
// call: $0.000010) is still not shown as $0.0000.
func TestFmtUSD(t *testing.T) {
	for v, want := range map[float64]string{0: "$0", 0.0000001: "<$0.000001", 0.00001: "$0.000010", 0.0006321: "$0.000632",
		0.005: "$0.005000", 1.234: "$1.2340"} {
		assert.Equal(t, want, fmtUSD(v), v)
		assert.Equal(t, pricing.FormatUSD(v, 0, true), fmtUSD(v), v)
	}
}
