//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// patternCorpus is a set of runs with failures of several kinds, as batches in write order:
// failing tools (storetest's TimeoutError), tool errors whose messages differ only by an id, a
// length stop, an alerted run, passing runs, and a run whose root arrives in a later batch.
func patternCorpus() (batches []ptrace.Traces, alert plog.Logs, late ptrace.Traces) {
	base := t0 + int64(24*time.Hour)
	var runs []storetest.Run
	for i := range 8 {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("pc-%d", i), Service: "svc", Agent: "weather", Model: "gpt-4.1",
			Start: base + int64(i)*int64(time.Minute), LLMCalls: 1 + i%2, ToolFail: i%3 == 0})
	}
	batches = append(batches, storetest.Traces(runs[:4]...), storetest.Traces(runs[4:]...))
	alert = storetest.Alert(runs[1], "loop detected")

	// Two runs whose tool errors differ by an order id, one with a length stop.
	td := ptrace.NewTraces()
	for i, order := range []string{"4711", "98342"} {
		addRun(td, fmt.Sprintf("pc-order-%d", i), base+int64(10+i)*int64(time.Minute), func(s ptrace.Span) {
			s.SetName("execute_tool lookup_order")
			s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
			s.Attributes().PutStr("gen_ai.tool.name", "lookup_order")
			s.Attributes().PutStr("error.type", "NotFound")
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("order " + order + " not found")
		})
	}
	addRun(td, "pc-length", base+int64(12*time.Minute), func(s ptrace.Span) {
		s.SetName("chat gpt-4.1")
		s.SetKind(ptrace.SpanKindClient)
		s.Attributes().PutStr("gen_ai.operation.name", "chat")
		s.Attributes().PutStr("gen_ai.request.model", "gpt-4.1")
		s.Attributes().PutInt("gen_ai.usage.input_tokens", 10)
		s.Attributes().PutInt("gen_ai.usage.output_tokens", 4096)
		s.Attributes().PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("length")
	})
	batches = append(batches, td)

	// A run whose children come first (incomplete, no root: a pattern of its own until the root
	// arrives) and whose tool fails.
	split := storetest.Run{Seed: "pc-split", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: base + int64(20*time.Minute),
		LLMCalls: 1, ToolFail: true}
	all := storetest.Traces(split)
	children, root := ptrace.NewTraces(), ptrace.NewTraces()
	all.CopyTo(children)
	all.CopyTo(root)
	children.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
	root.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return !s.ParentSpanID().IsEmpty() })
	// And a run whose children only ever arrive: incomplete.
	orphan := storetest.Traces(storetest.Run{Seed: "pc-orphan", Service: "svc", Agent: "weather", Model: "gpt-4.1",
		Start: base + int64(21*time.Minute), LLMCalls: 2})
	orphan.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
	orphan.ResourceSpans().MoveAndAppendTo(children.ResourceSpans())
	batches = append(batches, children)
	return batches, alert, root
}

// addRun appends a run of an agent root and one child that edit shapes.
func addRun(td ptrace.Traces, seed string, start int64, edit func(ptrace.Span)) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "orders")
	ss := rs.ScopeSpans().AppendEmpty()
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(storetest.TraceID(seed))
	root.SetSpanID(storetest.SpanID(seed, 0))
	root.SetName("invoke_agent support")
	root.SetStartTimestamp(pcommon.Timestamp(start))
	root.SetEndTimestamp(pcommon.Timestamp(start + int64(3*time.Second)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "support")
	s := ss.Spans().AppendEmpty()
	s.SetTraceID(root.TraceID())
	s.SetSpanID(storetest.SpanID(seed, 1))
	s.SetParentSpanID(root.SpanID())
	s.SetStartTimestamp(pcommon.Timestamp(start + int64(time.Second)))
	s.SetEndTimestamp(pcommon.Timestamp(start + int64(2*time.Second)))
	edit(s)
}

// reportJSON is rep as JSON with its costs rounded to 1e-9 USD (sums in another order).
func reportJSON(t *testing.T, rep patterns.Report) string {
	t.Helper()
	for i := range rep.Patterns {
		rep.Patterns[i].CostUSD = math.Round(rep.Patterns[i].CostUSD*1e9) / 1e9
	}
	b, err := json.MarshalIndent(rep, "", " ")
	require.NoError(t, err)
	return string(b)
}

// TestPatternsOnChDBMatchSQLite: the same batches written to the SQLite warm file and to the
// ClickHouse warm tier (the tiered exporter's path: records built, then written) give the same
// patterns (ids, titles, counts, shares, examples, variants, cost), before and after a late root
// completes a run; the signatures are in runagain_run_patterns after the writes (computed at
// ingest, not when listed); every batch written twice counts its runs once; the run index and
// Tiered read them as a store.PatternReader; an erasure removes the runs' signature rows.
func TestPatternsOnChDBMatchSQLite(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	schema := Schema{Database: "pt", WarmTTL: 90 * 24 * time.Hour}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}
	require.NoError(t, w.CreateWarm(ctx))
	warm, err := sqlitestore.OpenWarm(filepath.Join(t.TempDir(), "warm.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer warm.Close()

	batches, alert, late := patternCorpus()
	for _, td := range batches {
		require.NoError(t, warm.WriteTraces(ctx, td))
		require.NoError(t, w.WriteWarmRecords(ctx, w.WarmRecords(td, plog.Logs{})))
	}
	require.NoError(t, warm.WriteLogs(ctx, alert))
	require.NoError(t, w.WriteWarmLogs(ctx, alert))

	ch := &WarmReader{DB: db, Schema: schema}
	compare := func(msg string) patterns.Report {
		t.Helper()
		want, err := patterns.List(ctx, warm, store.PatternFilter{})
		require.NoError(t, err)
		got, err := patterns.List(ctx, ch, store.PatternFilter{})
		require.NoError(t, err)
		assert.Equal(t, reportJSON(t, want), reportJSON(t, got), msg)
		tiered, err := patterns.List(ctx, store.NewTiered(ch), store.PatternFilter{})
		require.NoError(t, err)
		assert.Equal(t, reportJSON(t, got), reportJSON(t, tiered), "%s: through Tiered", msg)
		return got
	}
	rep := compare("after the writes")
	assert.EqualValues(t, 13, rep.Runs, "11 runs, the split run's children, and the orphan run")
	titles := map[string]int64{}
	for _, p := range rep.Patterns {
		titles[p.Title] = p.Runs
	}
	assert.Equal(t, map[string]int64{
		`tool get_weather: TimeoutError "timeout"`:                                 3,
		`tool get_weather: TimeoutError "timeout" · incomplete (no_root, orphans)`: 1,
		`tool lookup_order: NotFound "order <n> not found"`:                        2,
		"finish length":                 1,
		"alert loop":                    1,
		"incomplete (no_root, orphans)": 1,
	}, titles, "the order ids differ, the pattern is one; the split run waits for its root")
	out, err := srv.Query("SELECT count(), countIf(pattern_id != '') FROM pt.runagain_run_patterns", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "8\t8\n", out, "the failing runs with a signal are signed when written (4 tools, 2 orders, length, alert)")

	// The root arrives: the split run is whole, and its failing tool puts it in the tools' pattern.
	require.NoError(t, warm.WriteTraces(ctx, late))
	require.NoError(t, w.WriteWarmRecords(ctx, w.WarmRecords(late, plog.Logs{})))
	rep = compare("after the late root")
	assert.EqualValues(t, 4, rep.Patterns[0].Runs, "the split run joined the tools' pattern")

	// Every batch again (an at-least-once retry): the same patterns, each run counted once.
	for _, td := range append(batches, late) {
		require.NoError(t, w.WriteWarmRecords(ctx, w.WarmRecords(td, plog.Logs{})))
	}
	require.NoError(t, w.WriteWarmLogs(ctx, alert))
	assert.Equal(t, reportJSON(t, rep), reportJSON(t, compare("after the retries")))
	_, err = srv.Query("OPTIMIZE TABLE pt.runagain_run_patterns FINAL", "TSV")
	require.NoError(t, err)
	out, err = srv.Query("SELECT count(), uniqExact(trace_id) FROM pt.runagain_run_patterns", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "8\t8\n", out, "merged: one row per signed run")
	assert.Equal(t, reportJSON(t, rep), reportJSON(t, compare("after merging")))

	show, runs, err := patterns.Show(ctx, ch, rep.Patterns[0].ID, store.PatternFilter{})
	require.NoError(t, err)
	assert.EqualValues(t, 4, show.Runs)
	assert.Len(t, runs, 4)

	// Runs looked up by id (the sessions page's pattern filter, store.PatternFilter.TraceIDs):
	// the pattern's runs among them, as the SQLite warm file answers, and none of an empty list.
	lookup := func(r store.PatternReader, f store.PatternFilter) []string {
		t.Helper()
		var ids []string
		require.NoError(t, r.PatternRuns(ctx, f, func(p store.PatternRun) error {
			ids = append(ids, p.TraceID)
			return nil
		}))
		return ids
	}
	asked := []string{storetest.TraceID("no-such-run").String()}
	for _, r := range runs {
		asked = append(asked, r.TraceID)
	}
	var passing string
	require.NoError(t, ch.PatternRuns(ctx, store.PatternFilter{}, func(p store.PatternRun) error {
		if p.PatternID == "" {
			passing = p.TraceID
		}
		return nil
	}))
	require.NotEmpty(t, passing)
	f := store.PatternFilter{PatternID: rep.Patterns[0].ID, TraceIDs: append(asked, passing)}
	got := lookup(ch, f)
	assert.Len(t, got, 4, "the pattern's four runs, not the passing run nor an unknown id")
	assert.Equal(t, lookup(warm, f), got)
	f.TraceIDs = asked[:2]
	assert.Len(t, lookup(ch, f), 1)
	f.TraceIDs = []string{}
	assert.Empty(t, lookup(ch, f), "an empty list asks for no run")

	e := &WarmEraser{DB: db, Schema: schema}
	_, err = e.Erase(ctx, store.Erasure{TraceIDs: []string{storetest.TraceID("pc-order-0").String()}})
	require.NoError(t, err)
	out, err = srv.Query(fmt.Sprintf("SELECT count() FROM pt.runagain_run_patterns WHERE trace_id = '%s'", storetest.TraceID("pc-order-0")), "TSV")
	require.NoError(t, err)
	assert.Equal(t, "0\n", out, "the erased run's signature row is gone")
}

// patternRuns is rep's patterns by id (runs and examples), without the length stop's.
func patternRuns(rep patterns.Report) map[string]string {
	out := map[string]string{}
	for _, p := range rep.Patterns {
		if p.Title != "finish length" {
			out[p.ID] = fmt.Sprintf("%s: %d runs, examples %v", p.Title, p.Runs, p.Examples)
		}
	}
	return out
}

// TestPatternsOnChDBSignedWhenRead: runs written without signatures (a database written before
// they existed, or NoSignatures) and a run that grew after it was signed are signed by the
// reader on the spot, as the writer would have signed them. As in the SQLite index, a run not
// signed when written is found by its errors and alerts: one whose only failure is in its
// attributes (a length stop) is not.
func TestPatternsOnChDBSignedWhenRead(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	now := func() time.Time { return time.Unix(0, t0) }
	plain := &Writer{DB: db, Schema: Schema{Database: "pr"}, Now: now, NoSignatures: true}
	w := &Writer{DB: db, Schema: Schema{Database: "ps"}, Now: now}
	require.NoError(t, plain.CreateWarm(ctx))
	require.NoError(t, w.CreateWarm(ctx))
	batches, alert, late := patternCorpus()
	for _, td := range batches {
		require.NoError(t, plain.WriteWarmTraces(ctx, td))
		require.NoError(t, w.WriteWarmTraces(ctx, td))
	}
	require.NoError(t, plain.WriteWarmLogs(ctx, alert))
	require.NoError(t, w.WriteWarmLogs(ctx, alert))
	out, err := srv.Query("SELECT count() FROM pr.runagain_run_patterns", "TSV")
	require.NoError(t, err)
	require.Equal(t, "0\n", out, "nothing signed")
	unsignedR, signedR := &WarmReader{DB: db, Schema: plain.Schema}, &WarmReader{DB: db, Schema: w.Schema}
	unsigned, err := patterns.List(ctx, unsignedR, store.PatternFilter{})
	require.NoError(t, err)
	signed, err := patterns.List(ctx, signedR, store.PatternFilter{})
	require.NoError(t, err)
	assert.Equal(t, patternRuns(signed), patternRuns(unsigned), "signed when read = signed when written")
	assert.Equal(t, signed.Failing-1, unsigned.Failing, "but for the length stop")

	// The late root written without signing: the signed database's row of the split run
	// (computed from its children) is out of date, and the reader signs the run again.
	require.NoError(t, plain.WriteWarmTraces(ctx, late))
	require.NoError(t, (&Writer{DB: db, Schema: w.Schema, Now: now, NoSignatures: true}).WriteWarmTraces(ctx, late))
	unsigned, err = patterns.List(ctx, unsignedR, store.PatternFilter{})
	require.NoError(t, err)
	signed, err = patterns.List(ctx, signedR, store.PatternFilter{})
	require.NoError(t, err)
	assert.Equal(t, patternRuns(signed), patternRuns(unsigned))
	assert.EqualValues(t, 4, signed.Patterns[0].Runs, "the split run's stale row is not read as it was")
}
