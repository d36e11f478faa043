//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
)

// joinedHalves is one run of an instrumented agent joined with the proxy's exchanges, in two
// batches: the agent's spans (an agent span carrying the sum of its calls, two chat spans) and
// the exchanges (one below the first chat span, one beside the second under the agent span,
// overlapping it in time), each exchange with the usage of its call and derived GenAI attributes.
func joinedHalves(tid pcommon.TraceID) (agent, proxy ptrace.Traces) {
	base := time.Unix(0, t0)
	half := func() ptrace.SpanSlice {
		td := ptrace.NewTraces()
		if agent == (ptrace.Traces{}) {
			agent = td
		} else {
			proxy = td
		}
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "joined")
		return rs.ScopeSpans().AppendEmpty().Spans()
	}
	span := func(ss ptrace.SpanSlice, id, parent byte, name string, startMS, endMS int) pcommon.Map {
		s := ss.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{id, 0xbb})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent, 0xbb})
		}
		s.SetName(name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(startMS) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(endMS) * time.Millisecond)))
		return s.Attributes()
	}
	usage := func(a pcommon.Map, in, out int64) {
		a.PutStr("gen_ai.request.model", "gpt-4o-mini")
		a.PutStr("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
		a.PutInt("gen_ai.usage.input_tokens", in)
		a.PutInt("gen_ai.usage.output_tokens", out)
	}
	as := half()
	a := span(as, 1, 0, "invoke_agent weather", 0, 100)
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutInt("gen_ai.usage.input_tokens", 300)
	a.PutInt("gen_ai.usage.output_tokens", 40)
	for _, c := range []struct {
		id         byte
		start, end int
		in, out    int64
	}{{2, 10, 30, 100, 20}, {3, 41, 60, 200, 20}} {
		a = span(as, c.id, 1, "chat gpt-4o-mini", c.start, c.end)
		a.PutStr("gen_ai.operation.name", "chat")
		usage(a, c.in, c.out)
	}
	ps := half()
	for _, x := range []struct {
		id, parent byte
		start, end int
		in, out    int64
	}{{4, 2, 11, 29, 100, 20}, {5, 1, 42, 59, 200, 20}} {
		a = span(ps, x.id, x.parent, "POST /v1/chat/completions", x.start, x.end)
		a.PutStr(runagainattr.FixtureSource, "proxy")
		a.PutBool(runagainattr.GenAIDerived, true)
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("http.request.method", "POST")
		usage(a, x.in, x.out)
	}
	return agent, proxy
}

// TestRunIndexCountingRuleOnChDB: the warm ClickHouse run index counts a joined run's LLM calls
// once (the instrumented spans' 300 input and 40 output tokens, not the exchanges' again nor the
// agent span's sum), whichever half arrives first and in separate inserts, as the SQLite run
// index does; a proxy-only run keeps its exchanges' usage; a run index created before the rule
// existed is upgraded in place and then counts the same.
func TestRunIndexCountingRuleOnChDB(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	schema := Schema{Database: "rule", WarmTTL: 90 * 24 * time.Hour}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}

	// An older deployment: the run index as it was before rule_spans, already holding run 1.
	require.NoError(t, w.exec(ctx, append([]string{schema.DatabaseDDL()}, schema.WarmDDL()...)))
	for _, q := range oldRunsDDL(schema) {
		_, err := srv.Query(q, "TSV")
		require.NoError(t, err, q)
	}
	tids := []pcommon.TraceID{{1, 0xaa}, {2, 0xaa}, {3, 0xaa}}
	a1, p1 := joinedHalves(tids[0])
	require.NoError(t, w.WriteWarmTraces(ctx, a1))
	require.NoError(t, w.WriteWarmTraces(ctx, p1))
	r := &WarmReader{DB: db, Schema: schema}
	old, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err, "the old index has no rule_spans: listed by aggregating the summaries")
	require.Len(t, old, 1)
	assert.Greater(t, old[0].InputTokens, int64(300), "before the upgrade: both halves summed")

	require.NoError(t, w.CreateWarm(ctx), "upgrades the index and backfills it")
	require.NoError(t, w.CreateWarm(ctx), "idempotent")
	out, err := srv.Query("SELECT count() FROM system.columns WHERE database = 'rule' AND table = 'runagain_runs' AND name = 'rule_spans'", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "1\n", out)

	a2, p2 := joinedHalves(tids[1]) // exchanges first, then the agent's spans
	require.NoError(t, w.WriteWarmTraces(ctx, p2))
	require.NoError(t, w.WriteWarmTraces(ctx, a2))
	require.NoError(t, w.WriteWarmTraces(ctx, a2), "an at-least-once retry")
	_, p3 := joinedHalves(tids[2]) // the proxy alone: its exchanges are the calls
	require.NoError(t, w.WriteWarmTraces(ctx, p3))

	want := map[string][2]int64{tids[0].String(): {300, 40}, tids[1].String(): {300, 40}, tids[2].String(): {300, 40}}
	check := func(msg string) {
		t.Helper()
		runs, err := r.Runs(ctx, store.RunFilter{})
		require.NoError(t, err, msg)
		require.Len(t, runs, 3, msg)
		sums := map[string]store.RunSummary{}
		for _, run := range runs {
			sums[run.TraceID] = run
			assert.Equal(t, want[run.TraceID], [2]int64{run.InputTokens, run.OutputTokens}, "%s: run %s", msg, run.TraceID)
		}
		// The same price for every call: the joined runs cost what the proxy-only run costs.
		assert.Greater(t, sums[tids[2].String()].CostUSD, 0.0, msg)
		for _, id := range tids[:2] {
			assert.InDelta(t, sums[tids[2].String()].CostUSD, sums[id.String()].CostUSD, 1e-12, "%s: cost of %s", msg, id)
			assert.EqualValues(t, 5, sums[id.String()].Spans, msg)
		}
		// Every span's usage summed: what the index listed before the rule (and what it lists
		// for runs without a derived exchange).
		agg := aggregated(ctx, t, r, store.RunFilter{})
		for _, run := range agg {
			if run.TraceID != tids[2].String() {
				assert.Greater(t, run.InputTokens, int64(300), "%s: every span summed counts both halves", msg)
			}
		}
		for _, f := range []store.RunFilter{{Limit: 1}, {SessionID: tids[1].String()}} {
			runs, err := r.Runs(ctx, f)
			require.NoError(t, err)
			require.Len(t, runs, 1, fmt.Sprint(f))
			assert.Equal(t, want[runs[0].TraceID], [2]int64{runs[0].InputTokens, runs[0].OutputTokens}, "%s: filter %v", msg, f)
		}
	}
	check("partial rows")
	_, err = srv.Query("OPTIMIZE TABLE rule.runagain_runs FINAL", "TSV")
	require.NoError(t, err)
	check("merged")
}

// oldRunsDDL is the run index as it was created before rule_spans (the DDL of that release).
func oldRunsDDL(s Schema) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
  trace_id String CODEC(ZSTD(1)),
  session_id SimpleAggregateFunction(max, String) CODEC(ZSTD(1)),
  start_time_unix_nano SimpleAggregateFunction(min, Int64) CODEC(Delta(8), ZSTD(1)),
  end_time_unix_nano SimpleAggregateFunction(max, Int64) CODEC(Delta(8), ZSTD(1)),
  spans AggregateFunction(groupUniqArray, Tuple(String, String, Int64, Int64, UInt8, Float64, Int32)),
  ingested_unix_nano SimpleAggregateFunction(max, Int64) CODEC(Delta(8), ZSTD(1))
) ENGINE = AggregatingMergeTree
ORDER BY trace_id`, s.Table(TableRuns)),
		fmt.Sprintf(`CREATE MATERIALIZED VIEW IF NOT EXISTS %s TO %s AS
SELECT trace_id, max(session_id) AS session_id, min(start_time_unix_nano) AS start_time_unix_nano,
  max(end_time_unix_nano) AS end_time_unix_nano,
  groupUniqArrayState(tuple(span_id, toString(model), input_tokens, output_tokens, toUInt8(status_code = 2), cost_usd, unpriced)) AS spans,
  max(ingested_unix_nano) AS ingested_unix_nano
FROM %s
GROUP BY trace_id`, s.Table(ViewRuns), s.Table(TableRuns), s.Table(TableSpanSummaries)),
	}
}

// TestRunIndexCountsEditedExchangesOnChDB: a rerun with --set model=gpt-4.1 of a joined run: the
// exchanges (runagain.rerun.edits, asked and answered by gpt-4.1) count in place of the agent's
// spans that name the model it thought it asked for, so the run costs what the same exchanges
// cost alone, as the SQLite run index and the read model count it (TestViewsAgree).
func TestRunIndexCountsEditedExchangesOnChDB(t *testing.T) {
	ctx := context.Background()
	_, db := openChDB(t)
	schema := Schema{Database: "edited", WarmTTL: 90 * 24 * time.Hour}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}
	require.NoError(t, w.CreateWarm(ctx))
	edit := func(td ptrace.Traces) ptrace.Traces {
		ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := 0; i < ss.Len(); i++ {
			a := ss.At(i).Attributes()
			a.PutStr(runagainattr.RerunEdits, "model=gpt-4.1")
			a.PutStr("gen_ai.request.model", "gpt-4.1")
			a.PutStr("gen_ai.response.model", "gpt-4.1-2025-04-14")
		}
		return td
	}
	joined, alone, unedited := pcommon.TraceID{7, 0xaa}, pcommon.TraceID{8, 0xaa}, pcommon.TraceID{9, 0xaa}
	a, p := joinedHalves(joined)
	require.NoError(t, w.WriteWarmTraces(ctx, a))
	require.NoError(t, w.WriteWarmTraces(ctx, edit(p)))
	_, p = joinedHalves(alone)
	require.NoError(t, w.WriteWarmTraces(ctx, edit(p)))
	_, p = joinedHalves(unedited)
	require.NoError(t, w.WriteWarmTraces(ctx, p))

	runs, err := (&WarmReader{DB: db, Schema: schema}).Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	sums := map[string]store.RunSummary{}
	for _, r := range runs {
		sums[r.TraceID] = r
	}
	require.Len(t, sums, 3)
	j, x, u := sums[joined.String()], sums[alone.String()], sums[unedited.String()]
	assert.Equal(t, [2]int64{300, 40}, [2]int64{j.InputTokens, j.OutputTokens}, "each call once")
	assert.Greater(t, x.CostUSD, u.CostUSD, "gpt-4.1 costs more than gpt-4o-mini")
	assert.InDelta(t, x.CostUSD, j.CostUSD, 1e-12, "priced at the model the edited exchanges asked and were answered by")
}
