// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/diff"
	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/ui"
)

// agreeRun builds small runs span by span.
type agreeRun struct {
	td   ptrace.Traces
	ss   ptrace.SpanSlice
	tid  pcommon.TraceID
	next byte
}

func newAgreeRun(tid byte) *agreeRun {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agree")
	return &agreeRun{td: td, ss: rs.ScopeSpans().AppendEmpty().Spans(), tid: pcommon.TraceID{tid, 0xaa}}
}

func (r *agreeRun) span(parent pcommon.SpanID, name string, startMS, endMS int) ptrace.Span {
	r.next++
	s := r.ss.AppendEmpty()
	s.SetTraceID(r.tid)
	s.SetSpanID(pcommon.SpanID{r.next, 0xbb})
	s.SetParentSpanID(parent)
	s.SetName(name)
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(startMS) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(endMS) * time.Millisecond)))
	return s
}

// chat adds an instrumented chat span with usage.
func (r *agreeRun) chat(parent pcommon.SpanID, startMS, endMS int, in, out int64) ptrace.Span {
	s := r.span(parent, "chat gpt-4o-mini", startMS, endMS)
	a := s.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	a.PutStr("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
	a.PutInt("gen_ai.usage.input_tokens", in)
	a.PutInt("gen_ai.usage.output_tokens", out)
	a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]}]`)
	return s
}

// exchange adds the proxy's recorded OpenAI chat completions exchange; derive says whether the
// GenAI attributes were derived at record time (else the span is as older recordings are).
func (r *agreeRun) exchange(parent pcommon.SpanID, startMS, endMS int, in, out int64, derive bool) ptrace.Span {
	return r.exchangeOf("gpt-4o-mini", "gpt-4o-mini-2024-07-18", parent, startMS, endMS, in, out, derive)
}

// exchangeOf is exchange with the request and response models given.
func (r *agreeRun) exchangeOf(model, respModel string, parent pcommon.SpanID, startMS, endMS int, in, out int64, derive bool) ptrace.Span {
	s := r.span(parent, "POST /v1/chat/completions", startMS, endMS)
	ex := &fx.Exchange{Method: "POST", URL: "https://api.openai.com/v1/chat/completions", Status: 200, Source: "proxy",
		Start: s.StartTimestamp().AsTime(), End: s.EndTimestamp().AsTime(),
		RequestHeader:  http.Header{"Content-Type": {"application/json"}},
		ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		RequestBody:    []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"weather in Paris?"}]}`),
		ResponseBody: []byte(fmt.Sprintf(`{"id":"c1","object":"chat.completion","model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Sunny."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, respModel, in, out, in+out))}
	fx.ToSpan(ex, s)
	s.SetParentSpanID(parent)
	if derive {
		llmhttp.Derive(ex, s.Attributes())
	}
	return s
}

func (r *agreeRun) run() *store.Run {
	return &store.Run{TraceID: r.tid.String(), Traces: r.td, Logs: plog.NewLogs(), Tier: store.TierHot}
}

// agreementRuns: a proxy-only run (one exchange derived at record time, one recorded before
// that), and an instrumented agent joined with its proxy exchanges (one below its LLM span, one
// beside it under the agent span, overlapping it in time), with an agent span that carries the
// sum of its calls' usage.
func agreementRuns() map[string]*store.Run {
	p := newAgreeRun(1)
	root := p.span(pcommon.SpanID{}, "runagain proxy python agent.py", 0, 100)
	p.exchange(root.SpanID(), 10, 20, 120, 30, true)
	p.exchange(root.SpanID(), 30, 40, 200, 10, true)

	o := newAgreeRun(3) // recorded before GenAI attributes were derived at record time
	oroot := o.span(pcommon.SpanID{}, "runagain proxy python agent.py", 0, 100)
	o.exchange(oroot.SpanID(), 10, 20, 120, 30, false)
	o.exchange(oroot.SpanID(), 30, 40, 200, 10, false)

	j := newAgreeRun(2)
	agent := j.span(pcommon.SpanID{}, "invoke_agent weather", 0, 100)
	agent.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	agent.Attributes().PutInt("gen_ai.usage.input_tokens", 300)
	agent.Attributes().PutInt("gen_ai.usage.output_tokens", 40)
	c1 := j.chat(agent.SpanID(), 10, 30, 100, 20)
	j.exchange(c1.SpanID(), 11, 29, 100, 20, true)
	tool := j.span(agent.SpanID(), "execute_tool get_weather", 31, 40)
	tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	tool.Attributes().PutStr("gen_ai.tool.name", "get_weather")
	j.chat(agent.SpanID(), 41, 60, 200, 20)
	j.exchange(agent.SpanID(), 42, 59, 200, 20, true) // traceparent of the agent span: beside the call

	// A rerun of the joined run with --set model=gpt-4.1: the agent's spans recorded the model it
	// thought it asked for, the edited exchanges what was sent and answered.
	e := newAgreeRun(4)
	eagent := e.span(pcommon.SpanID{}, "invoke_agent weather", 0, 100)
	eagent.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	ec1 := e.chat(eagent.SpanID(), 10, 30, 100, 20)
	x1 := e.exchangeOf("gpt-4.1", "gpt-4.1-2025-04-14", ec1.SpanID(), 11, 29, 100, 20, true)
	ec2 := e.chat(eagent.SpanID(), 41, 60, 200, 20)
	x2 := e.exchangeOf("gpt-4.1", "gpt-4.1-2025-04-14", ec2.SpanID(), 42, 59, 200, 20, true)
	for _, x := range []ptrace.Span{x1, x2} {
		x.Attributes().PutStr(runagainattr.RerunEdits, "model=gpt-4.1")
	}
	return map[string]*store.Run{"proxy-only": p.run(), "joined": j.run(), "older-recording": o.run(), "rerun-edited": e.run()}
}

// TestViewsAgree renders the same runs through every view (show --json, show --step, the UI's
// run page and rows, diff, dataset facts, and the run index `sessions` lists) and asserts they
// agree on the steps, LLM calls, tokens and cost: the read model (internal/runview) is the one
// source of each number, and the run index applies the same counting rule.
func TestViewsAgree(t *testing.T) {
	runs := agreementRuns()
	want := map[string][3]int64{ // LLM calls, input tokens, output tokens
		"proxy-only":      {2, 320, 40},
		"joined":          {2, 300, 40},
		"older-recording": {2, 320, 40},
		"rerun-edited":    {2, 300, 40},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			// The run index is written when the spans arrive: an older recording's exchanges were
			// indexed without usage (their GenAI attributes are read from the bodies now).
			v := agreeViews(t, run, name != "older-recording")
			w := want[name]
			assert.Equal(t, w, [3]int64{v.Totals.LLMCalls, v.Totals.InputTokens, v.Totals.OutputTokens})
			if name == "rerun-edited" {
				// Priced at the model that answered, not the one the agent's spans name.
				usd := 0.0
				for _, in := range [][2]int64{{100, 20}, {200, 20}} {
					a := pcommon.NewMap()
					a.PutStr("gen_ai.response.model", "gpt-4.1-2025-04-14")
					c := pricing.DefaultPrices().UsageCost(genai.Usage{Input: in[0], Output: in[1]}, a, run.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).StartTimestamp())
					require.False(t, c.Unpriced)
					usd += c.USD
				}
				assert.InDelta(t, usd, v.Totals.CostUSD, 1e-12, "cost at gpt-4.1")
				assert.Equal(t, []string{"gpt-4.1-2025-04-14"}, v.Totals.Models)
			}
		})
	}
	t.Run("corpus", func(t *testing.T) {
		dir := filepath.Join(corpus.Dir(t), "langfuse/worker/src/__tests__/chatml/framework-traces")
		files, err := filepath.Glob(filepath.Join(dir, "*.trace.json"))
		require.NoError(t, err)
		if len(files) == 0 {
			t.Skip("no langfuse framework traces in the corpus")
		}
		for _, f := range files {
			res, err := importer.ParseFile(f)
			require.NoError(t, err)
			tid := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
			t.Run(filepath.Base(f), func(t *testing.T) {
				agreeViews(t, &store.Run{TraceID: tid.String(), Traces: res.Traces, Logs: plog.NewLogs(), Tier: store.TierHot}, true)
			})
		}
	})
}

// agreeViews stores run in a real SQLite hot file, reads it back through every view and
// asserts they agree with its View (the run index too when index); it returns the View.
func agreeViews(t *testing.T, run *store.Run, index bool) *runview.View {
	t.Helper()
	ctx := context.Background()
	prices := pricing.DefaultPrices()
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "hot.db"), sqlitestore.Options{Prices: prices})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	// The proxy's exchanges and the agent's spans arrive in separate requests.
	for _, part := range splitExchanges(run.Traces) {
		_, err := db.WriteTraces(ctx, part)
		require.NoError(t, err)
	}
	stored, err := db.Run(ctx, run.TraceID)
	require.NoError(t, err)
	v, err := runview.Build(ctx, stored, runview.Options{Prices: prices})
	require.NoError(t, err)
	tot := v.Totals
	const eps = 1e-9

	// sessions: the run index written by the hot writer.
	rows, err := db.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	if index {
		agreeIndex(t, tot, rows[0])
	}
	// The warm tier's index, written from the trimmed spans as the tiered exporter does.
	warm, err := sqlitestore.OpenWarm(filepath.Join(t.TempDir(), "warm.db"), sqlitestore.Options{Prices: prices})
	require.NoError(t, err)
	t.Cleanup(func() { warm.Close() })
	for _, part := range splitExchanges(run.Traces) {
		require.NoError(t, warm.WriteTraces(ctx, store.TrimTraces(part, nil)))
	}
	wrows, err := warm.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, wrows, 1)
	if index {
		agreeIndex(t, tot, wrows[0])
	}

	// show --json.
	sh, err := buildShow(v)
	require.NoError(t, err)
	var llmSpans []string
	steps := 0
	for _, s := range sh.Spans {
		if s.Step > 0 {
			steps++
		}
		if s.LLMStep > 0 {
			llmSpans = append(llmSpans, s.SpanID)
		}
	}
	assert.Equal(t, int(tot.Steps), steps, "show steps")
	assert.Len(t, llmSpans, int(tot.LLMCalls), "show LLM steps")
	assert.InDelta(t, tot.CostUSD, sh.CostUSD, eps, "show cost")
	assert.Equal(t, tot.Unpriced, sh.Unpriced)

	// show --step N names the same span as show's N-th LLM step.
	for i, id := range llmSpans {
		in, err := v.StepInput(i + 1)
		require.NoError(t, err)
		assert.Equal(t, id, in.SpanID, "step %d", i+1)
		assert.Equal(t, len(llmSpans), in.Steps)
	}
	if _, err := v.StepInput(len(llmSpans) + 1); err == nil {
		t.Errorf("step %d past the last LLM call is not refused", len(llmSpans)+1)
	}

	// diff of the run with itself.
	res, err := diff.Runs(v, v, diff.Options{})
	require.NoError(t, err)
	assert.Equal(t, tot.LLMCalls, res.Totals.LLMCalls.A, "diff LLM calls")
	assert.Equal(t, tot.Steps, res.Totals.Steps.A, "diff steps")
	assert.Equal(t, tot.InputTokens, res.Totals.InputTokens.A, "diff input tokens")
	assert.Equal(t, tot.OutputTokens, res.Totals.OutputTokens.A, "diff output tokens")
	assert.InDelta(t, tot.CostUSD, res.Totals.CostUSD.A, 1e-8, "diff cost")
	var diffLLM []string
	for _, p := range res.Pairs {
		if p.A != nil && p.A.LLMStep > 0 {
			diffLLM = append(diffLLM, p.A.SpanID)
			assert.Equal(t, len(diffLLM), p.A.LLMStep)
		}
	}
	assert.Equal(t, llmSpans, diffLLM, "diff numbers the LLM steps as show --step")

	// dataset facts (expectations and budgets).
	f, err := dataset.RunFacts(v)
	require.NoError(t, err)
	assert.Equal(t, tot.LLMCalls, f.Steps, "dataset steps")
	assert.Equal(t, tot.InputTokens+tot.OutputTokens, f.Tokens, "dataset tokens")
	assert.InDelta(t, tot.CostUSD, f.CostUSD, eps, "dataset cost")

	// The UI: the run page's numbers and the timeline rows' step numbers.
	srv, err := ui.New(ui.Options{Reader: db, NoRehydrate: true, Prices: prices})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	page := get(t, hs.URL+"/runs/"+run.TraceID)
	if m := regexp.MustCompile(`LLM calls</dt><dd>(?:<a [^>]*>)?(\d+)<`).FindStringSubmatch(page); assert.NotNil(t, m, "run page LLM calls") {
		n, _ := strconv.Atoi(m[1])
		assert.Equal(t, int(tot.LLMCalls), n, "UI LLM calls")
	}
	if len(v.Nodes) > 0 {
		assert.Contains(t, page, "<dt>Cost</dt><dd>"+pricing.FormatUSD(tot.CostUSD, 0, true), "UI cost")
	}
	var rowsResp struct {
		Rows []ui.Row `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(t, hs.URL+"/api/runs/"+run.TraceID+"/rows?limit=500")), &rowsResp))
	var uiLLM []string
	for _, r := range rowsResp.Rows {
		if r.Step > 0 {
			uiLLM = append(uiLLM, r.SpanID)
			assert.Equal(t, len(uiLLM), r.Step)
		}
	}
	assert.Equal(t, llmSpans, uiLLM, "UI numbers the LLM steps as show --step")
	return v
}

// agreeIndex asserts that a run index row counts as the View.
func agreeIndex(t *testing.T, tot runview.Totals, row store.RunSummary) {
	t.Helper()
	assert.Equal(t, tot.InputTokens, row.InputTokens, "%s run index input tokens", row.Tier)
	assert.Equal(t, tot.OutputTokens, row.OutputTokens, "%s run index output tokens", row.Tier)
	assert.InDelta(t, tot.CostUSD, row.CostUSD, 1e-9, "%s run index cost", row.Tier)
	assert.Equal(t, tot.Unpriced, row.Unpriced, "%s run index unpriced calls", row.Tier)
}

// splitExchanges returns the recorded exchanges and the other spans as two requests.
func splitExchanges(td ptrace.Traces) []ptrace.Traces {
	ex, other := ptrace.NewTraces(), ptrace.NewTraces()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				dst := other
				if fx.IsFixture(s) {
					dst = ex
				}
				drs := dst.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(drs.Resource())
				dss := drs.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(dss.Scope())
				s.CopyTo(dss.Spans().AppendEmpty())
			}
		}
	}
	var out []ptrace.Traces
	for _, p := range []ptrace.Traces{other, ex} {
		if p.SpanCount() > 0 {
			out = append(out, p)
		}
	}
	return out
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	return string(b)
}
