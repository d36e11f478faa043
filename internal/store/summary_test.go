// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()

var runA = storetest.Run{Seed: "a", Session: "conv-1", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: t0, LLMCalls: 2, ToolFail: true}

func TestSummarizeKeepsNoPayload(t *testing.T) {
	spans, events := store.Summarize(storetest.Traces(runA), nil, nil)
	require.Len(t, spans, runA.Spans())
	require.Len(t, events, 1)
	for _, s := range spans {
		assert.NotContains(t, s.Attributes, "PAYLOAD-SECRET", s.Name)
		assert.NotContains(t, s.Attributes, "_ref", s.Name)
		if s.ToolName == "" {
			assert.Equal(t, "conv-1", s.SessionID, s.Name)
		} else {
			assert.Empty(t, s.SessionID, "as recorded: the tool span names no session")
		}
	}
	byName := map[string]store.SpanSummary{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	llm := byName["chat gpt-4.1"]
	assert.Equal(t, "llm", llm.GenAIKind)
	assert.EqualValues(t, 100, llm.InputTokens)
	assert.Contains(t, llm.Attributes, `"gen_ai.usage.input_tokens":100`)
	tool := byName["execute_tool get_weather"]
	assert.Equal(t, "get_weather", tool.ToolName)
	assert.Equal(t, "TimeoutError", tool.ErrorType)
	assert.EqualValues(t, 2, tool.StatusCode)
	assert.Equal(t, "weather", byName["invoke_agent weather"].AgentName)
	e := events[0]
	assert.Equal(t, "exception", e.Kind)
	assert.Equal(t, "weather API timed out", e.Message)
	assert.NotContains(t, e.Attributes, "PAYLOAD-SECRET", "stacktrace is dropped")

	// Retried batches give the same event ids.
	_, again := store.Summarize(storetest.Traces(runA), nil, nil)
	assert.Equal(t, e.EventID, again[0].EventID)
}

func TestRebuildTracesRoundTripsSummaries(t *testing.T) {
	spans, events := store.Summarize(storetest.Traces(runA), nil, nil)
	td, err := store.RebuildTraces(spans, events)
	require.NoError(t, err)
	require.Equal(t, runA.Spans(), td.SpanCount())
	_, flat := store.Order(td, nil)
	root := flat[0].Span
	assert.Equal(t, "invoke_agent weather", root.Name())
	assert.Equal(t, storetest.TraceID("a"), root.TraceID())
	var tokens int64
	for _, n := range flat {
		tokens += genai.TokenUsage(n.Span.Attributes()).Input
		if n.Span.Name() == "execute_tool get_weather" {
			require.Equal(t, 1, n.Span.Events().Len())
			assert.Equal(t, ptrace.StatusCodeError, n.Span.Status().Code())
			assert.Equal(t, genai.KindTool, genai.Classify(n.Span.Attributes()))
		}
		svc, _ := n.Resource.Attributes().Get("service.name")
		assert.Equal(t, "svc", svc.Str())
	}
	assert.EqualValues(t, 200, tokens)
}

func TestPartialsMergeOnePerSession(t *testing.T) {
	runB := storetest.Run{Seed: "b", Session: "conv-1", Service: "svc", Agent: "weather", Model: "claude-sonnet-4", Start: t0 + int64(time.Hour), LLMCalls: 1}
	runC := storetest.Run{Seed: "c", Service: "other", Agent: "x", Model: "gpt-4.1", Start: t0 - int64(time.Hour), LLMCalls: 1}
	p1 := store.Partials(storetest.Traces(runA, runC), storetest.Alert(runA, "loop"), nil, 1, nil)
	p2 := store.Partials(storetest.Traces(runB), plog.Logs{}, nil, 2, nil)
	require.Len(t, p1, 2, "one partial per session per batch")
	require.Len(t, p2, 1)
	// A retried batch (same batch id) counts once.
	all := append(append(append([]store.SessionPartial{}, p1...), p2...), p1...)
	ss := store.MergePartials(all)
	require.Len(t, ss, 2)
	conv := ss[0]
	require.Equal(t, "conv-1", conv.SessionID, "newest last seen first")
	assert.EqualValues(t, runA.Spans()+runB.Spans(), conv.Spans)
	assert.EqualValues(t, 300, conv.InputTokens)
	assert.EqualValues(t, 60, conv.OutputTokens)
	assert.EqualValues(t, 1, conv.Errors)
	assert.EqualValues(t, 1, conv.Alerts)
	assert.EqualValues(t, 2, conv.Partials)
	assert.Equal(t, []string{"claude-sonnet-4", "gpt-4.1"}, conv.Models)
	assert.ElementsMatch(t, []string{storetest.TraceID("a").String(), storetest.TraceID("b").String()}, conv.TraceIDs)
	assert.Equal(t, t0, conv.FirstSeen)
	assert.Equal(t, "weather", conv.Agent)
	own := ss[1]
	assert.Equal(t, storetest.TraceID("c").String(), own.SessionID, "a run without a session key is its own session")
}

type fake struct {
	runs []store.RunSummary
	one  map[string]*store.Run
}

func (f *fake) Runs(context.Context, store.RunFilter) ([]store.RunSummary, error) { return f.runs, nil }
func (f *fake) Run(_ context.Context, id string) (*store.Run, error) {
	if r, ok := f.one[id]; ok {
		return r, nil
	}
	return nil, store.ErrNotFound
}
func (f *fake) Close() error { return nil }

func TestTieredFallsBackAndListsEachRunOnce(t *testing.T) {
	at := func(h int) time.Time { return time.Unix(0, t0).Add(time.Duration(h) * time.Hour) }
	hot := &fake{runs: []store.RunSummary{{TraceID: "t3", Start: at(3), Tier: "hot"}},
		one: map[string]*store.Run{"t3": {TraceID: "t3", Tier: "hot"}}}
	warm := &fake{runs: []store.RunSummary{{TraceID: "t3", Start: at(3), Tier: "warm"}, {TraceID: "t2", Start: at(2), Tier: "warm"}},
		one: map[string]*store.Run{"t2": {TraceID: "t2", Tier: "warm"}, "t3": {Tier: "warm"}}}
	cold := &fake{runs: []store.RunSummary{
		{SessionID: "s", TraceID: "t3", TraceIDs: []string{"t1", "t2", "t3"}, Start: at(1), Tier: "cold"},
		{SessionID: "s2", TraceID: "t3", TraceIDs: []string{"t3"}, Start: at(0), Tier: "cold"},
	}, one: map[string]*store.Run{"t1": {TraceID: "t1", Tier: "cold"}, "t2": {Tier: "cold"}}}
	r := store.NewTiered(hot, nil, warm, cold)
	ctx := context.Background()
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	var got []string
	for _, row := range rows {
		got = append(got, row.Tier+":"+row.TraceID+strings.Join(row.TraceIDs, ","))
	}
	assert.Equal(t, []string{"hot:t3", "warm:t2", "cold:t3t1,t2,t3"}, got, "the cold session still has t1; s2 adds nothing")
	rows, err = r.Runs(ctx, store.RunFilter{Limit: 2})
	require.NoError(t, err)
	assert.Len(t, rows, 2)
	for id, tier := range map[string]string{"t3": "hot", "t2": "warm", "t1": "cold"} {
		run, err := r.Run(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, tier, run.Tier, id)
	}
	_, err = r.Run(ctx, "t9")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestSessionRunTellsWhatColdKnows(t *testing.T) {
	ss := store.MergePartials(store.Partials(storetest.Traces(runA), storetest.Alert(runA, "loop"), nil, 1, nil))
	require.Len(t, ss, 1)
	s, ok := store.FindSession(ss, storetest.TraceID("a").String())
	require.True(t, ok)
	run := store.SessionRun(storetest.TraceID("a").String(), s)
	assert.Equal(t, "cold", run.Tier)
	assert.Equal(t, 0, run.Traces.SpanCount())
	require.Equal(t, 1, run.Logs.LogRecordCount())
	lr := run.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, store.SessionSummaryEventName, lr.EventName())
	assert.Contains(t, lr.Body().Str(), "Session conv-1: 1 runs, 4 spans, 1 errors, 1 alerts, tokens in 200 out 40")
	_, ok = store.FindSession(ss, storetest.TraceID("zzz").String())
	assert.False(t, ok)
}

func TestCostFromPricingTable(t *testing.T) {
	unknown := storetest.Run{Seed: "u", Session: "conv-u", Service: "svc", Agent: "x", Model: "no-such-model-xyz", Start: t0, LLMCalls: 1}
	td := storetest.Traces(runA, unknown)
	spans, _ := store.Summarize(td, nil, nil)
	r, ok := pricing.Default().Lookup("", "gpt-4.1")
	require.True(t, ok, "gpt-4.1 is in the genai-prices table")
	one := r.Cost(pricing.Usage{Input: 100, Output: 20}, time.Unix(0, t0))
	require.Greater(t, one, 0.0)
	var known float64
	for _, s := range spans {
		switch s.Model {
		case "gpt-4.1":
			assert.InDelta(t, one, s.CostUSD, 1e-12)
			assert.Zero(t, s.Unpriced)
			known += s.CostUSD
		case "no-such-model-xyz":
			assert.Zero(t, s.CostUSD)
			assert.EqualValues(t, 1, s.Unpriced, "usage without a price is counted, not free")
		default:
			assert.Zero(t, s.CostUSD, s.Name)
			assert.Zero(t, s.Unpriced, s.Name)
		}
	}
	ss := store.MergePartials(store.Partials(td, plog.Logs{}, nil, 1, nil))
	require.Len(t, ss, 2)
	for _, s := range ss {
		if s.SessionID == "conv-1" {
			assert.InDelta(t, known, s.CostUSD, 1e-12)
			assert.Zero(t, s.Unpriced)
		} else {
			assert.EqualValues(t, 1, s.Unpriced)
		}
	}
}

// TestRebuildTracesKeepsAttributeOrder: a warm span's attributes come back in the order of its
// summary's JSON text (sorted by key, as json.Marshal writes an object), the same on every read:
// through a Go map, `runagain show --json` printed the attributes of a warm run in another order
// each time.
func TestRebuildTracesKeepsAttributeOrder(t *testing.T) {
	keys := []string{"gen_ai.usage.output_tokens", "langfuse.observation.type", "gen_ai.agent.name", "agent_name",
		"gen_ai.usage.input_tokens", "gen_ai.operation.name", "server.address", "gen_ai.request.model",
		"gen_ai.response.finish_reasons", "gen_ai.system", "http.response.status_code", "session.id"}
	span := ptrace.NewSpan()
	span.SetTraceID(pcommon.TraceID{1})
	span.SetSpanID(pcommon.SpanID{2})
	for i, k := range keys {
		span.Attributes().PutInt(k, int64(i))
	}
	span.Attributes().PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("stop")
	td := ptrace.NewTraces()
	span.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	sums, _ := store.Summarize(td, nil, nil)
	require.Len(t, sums, 1)
	for range 20 {
		got, err := store.RebuildTraces(sums, nil)
		require.NoError(t, err)
		var order []string
		got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Range(func(k string, _ pcommon.Value) bool {
			order = append(order, k)
			return true
		})
		require.Equal(t, slices.Sorted(slices.Values(keys)), order)
	}
}
