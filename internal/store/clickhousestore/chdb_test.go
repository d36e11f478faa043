//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

var (
	t0   = time.Date(2026, 10, 30, 12, 0, 0, 0, time.UTC).UnixNano()
	runA = storetest.Run{Seed: "a", Session: "conv-1", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: t0, LLMCalls: 2, ToolFail: true}
	runB = storetest.Run{Seed: "b", Session: "conv-1", Service: "svc", Agent: "weather", Model: "claude-sonnet-4", Start: t0 + int64(time.Hour), LLMCalls: 1}
	runC = storetest.Run{Seed: "c", Service: "other", Agent: "x", Model: "gpt-4.1", Start: t0 + int64(2*time.Hour), LLMCalls: 1}
)

// openChDB starts chDB for t and opens a handle on it, closed when t ends.
func openChDB(t *testing.T) (*chdbtest.Server, *sql.DB) {
	srv := chdbtest.Start(t)
	db, err := OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return srv, db
}

// TestWarmColdDDLWritesAndReadersOnChDB runs our warm and cold DDL, the writers' inserts
// (clickhouse-go over HTTP) and every reader query against chDB.
func TestWarmColdDDLWritesAndReadersOnChDB(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	schema := Schema{Database: "runagain", WarmTTL: 90 * 24 * time.Hour}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}
	require.NoError(t, w.CreateWarm(ctx))
	require.NoError(t, w.CreateCold(ctx))
	require.NoError(t, w.CreateWarm(ctx), "DDL is idempotent")

	td := storetest.Traces(runA, runB, runC)
	alert := storetest.Alert(runA, "loop detected")
	require.NoError(t, w.WriteWarmTraces(ctx, td))
	require.NoError(t, w.WriteWarmTraces(ctx, td), "an at-least-once duplicate")
	require.NoError(t, w.WriteWarmLogs(ctx, alert))
	require.NoError(t, w.WriteCold(ctx, storetest.Traces(runA, runC), alert))
	require.NoError(t, w.WriteCold(ctx, storetest.Traces(runB), storetest.Alert(runB, "x")))

	// A retried cold batch carries the same insert_deduplication_token: the server drops it.
	out, err := srv.Query("SELECT count() FROM runagain.runagain_sessions", "TSV")
	require.NoError(t, err)
	require.Equal(t, "3\n", out)
	require.NoError(t, w.WriteCold(ctx, storetest.Traces(runB), storetest.Alert(runB, "x")))
	out, err = srv.Query("SELECT count() FROM runagain.runagain_sessions", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "3\n", out, "deduplicated by batch id")

	out, err = srv.Query("SELECT count() FROM runagain.runagain_span_summaries", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "16\n", out, "8 spans written twice: the table appends, readers collapse")
	ddl, err := srv.Query("SHOW CREATE TABLE runagain.runagain_span_summaries", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "TTL toDateTime(intDiv(ingested_unix_nano, 1000000000)) + toIntervalSecond(7776000)")
	ddl, err = srv.Query("SHOW CREATE TABLE runagain.runagain_sessions", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "AggregatingMergeTree")

	warm := &WarmReader{DB: db, Schema: schema}
	runs, err := warm.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 3)
	assert.Equal(t, storetest.TraceID("c").String(), runs[0].TraceID, "newest first")
	byTrace := map[string]store.RunSummary{}
	for _, r := range runs {
		byTrace[r.TraceID] = r
	}
	a := byTrace[storetest.TraceID("a").String()]
	assert.Equal(t, "conv-1", a.SessionID)
	assert.EqualValues(t, runA.Spans(), a.Spans)
	assert.EqualValues(t, 200, a.InputTokens)
	assert.EqualValues(t, 40, a.OutputTokens)
	assert.EqualValues(t, 1, a.Errors)
	assert.Equal(t, []string{"gpt-4.1"}, a.Models)
	assert.Greater(t, a.CostUSD, 0.0, "priced from the genai-prices table")
	assert.Zero(t, a.Unpriced)
	assert.Equal(t, time.Unix(0, t0).UTC(), a.Start)
	since, err := warm.Runs(ctx, store.RunFilter{Since: time.Unix(0, t0+int64(30*time.Minute)), Limit: 1})
	require.NoError(t, err)
	require.Len(t, since, 1)
	assert.Equal(t, storetest.TraceID("c").String(), since[0].TraceID)

	run, err := warm.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	assert.Equal(t, "warm", run.Tier)
	assert.Equal(t, runA.Spans(), run.Traces.SpanCount())
	assert.Equal(t, 1, run.Logs.LogRecordCount())
	_, err = warm.Run(ctx, strings.Repeat("0", 31)+"1")
	assert.ErrorIs(t, err, store.ErrNotFound)

	cold := &ColdReader{DB: db, Schema: schema}
	rows, err := cold.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	var conv store.RunSummary
	for _, r := range rows {
		if r.SessionID == "conv-1" {
			conv = r
		}
	}
	assert.EqualValues(t, runA.Spans()+runB.Spans(), conv.Spans)
	assert.EqualValues(t, 300, conv.InputTokens)
	assert.EqualValues(t, 2, conv.Alerts)
	assert.Equal(t, []string{"claude-sonnet-4", "gpt-4.1"}, conv.Models)
	assert.Greater(t, conv.CostUSD, a.CostUSD, "runs a and b")
	assert.ElementsMatch(t, []string{storetest.TraceID("a").String(), storetest.TraceID("b").String()}, conv.TraceIDs)
	late, err := cold.Runs(ctx, store.RunFilter{Since: time.Unix(0, t0+int64(90*time.Minute)), Limit: 5})
	require.NoError(t, err)
	require.Len(t, late, 1, "conv-1 started at t0; only run c's own session starts later")
	assert.Equal(t, storetest.TraceID("c").String(), late[0].SessionID)
	// Until, the session and the limit are applied by the engine (RunsQuery), not after reading
	// every session.
	early, err := cold.Runs(ctx, store.RunFilter{Until: time.Unix(0, t0+int64(90*time.Minute))})
	require.NoError(t, err)
	require.Len(t, early, 1, "only conv-1 started before run c")
	assert.Equal(t, "conv-1", early[0].SessionID)
	one, err := cold.Runs(ctx, store.RunFilter{SessionID: storetest.TraceID("c").String()})
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Equal(t, storetest.TraceID("c").String(), one[0].SessionID)
	q := cold.RunsQuery(store.RunFilter{SessionID: "conv-1", Until: time.Unix(0, t0+1), Limit: 1})
	assert.Contains(t, q, "WHERE session_id = 'conv-1' GROUP BY session_id")
	assert.Contains(t, q, fmt.Sprintf("first_seen < %d", t0+1))
	assert.Contains(t, q, "LIMIT 1")
	first, err := cold.Runs(ctx, store.RunFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, first, 1)
	assert.Equal(t, rows[0], first[0], "newest session first")
	crun, err := cold.Run(ctx, storetest.TraceID("b").String())
	require.NoError(t, err)
	require.NotNil(t, crun.Session)
	assert.Equal(t, "conv-1", crun.Session.SessionID)
	assert.EqualValues(t, 2, crun.Session.Partials)
	_, err = cold.Run(ctx, strings.Repeat("0", 31)+"1")
	assert.ErrorIs(t, err, store.ErrNotFound)

	// Merging in the engine: OPTIMIZE FINAL folds partials into one row per session, and the
	// readers' answer does not change.
	_, err = srv.Query("OPTIMIZE TABLE runagain.runagain_sessions FINAL", "TSV")
	require.NoError(t, err)
	out, err = srv.Query("SELECT count() FROM runagain.runagain_sessions", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "2\n", out)
	again, err := cold.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	assert.Equal(t, rows, again)
}

// TestReadersOnEmptyChDB: tiers that were never configured (no tables, no database) read as
// empty, so the CLI can point at a ClickHouse that holds only some tiers.
func TestReadersOnEmptyChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	db, err := OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	r := Open(db, HotTables{Database: "nope"}, Schema{Database: "nope"}, nil)
	defer r.Close()
	runs, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	assert.Empty(t, runs)
	_, err = r.Run(ctx, strings.Repeat("ab", 16))
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// TestColdRecordsKeepTheirIngestionOnChDB: a partial built before the cold queue is inserted with
// the ingestion time it was built with (the cold TTL counts from it), not the time the queue
// delivered it; in a batch the queue merged, each request's partial keeps its own.
func TestColdRecordsKeepTheirIngestionOnChDB(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	schema := Schema{Database: "runagain"}
	built := time.Unix(0, t0)
	early := &Writer{DB: db, Schema: schema, Now: func() time.Time { return built }}
	mid := &Writer{DB: db, Schema: schema, Now: func() time.Time { return built.Add(time.Minute) }}
	later := &Writer{DB: db, Schema: schema, Now: func() time.Time { return built.Add(time.Hour) }}
	require.NoError(t, early.CreateCold(ctx))
	r := early.ColdRecords(storetest.Traces(runA), plog.Logs{})
	r.Append(mid.ColdRecords(storetest.Traces(runB), plog.Logs{}))
	require.NoError(t, later.WriteColdRecords(ctx, r), "written an hour after it was built")
	out, err := srv.Query("SELECT session_id, ingested_unix_nano, partials FROM runagain.runagain_sessions ORDER BY ingested_unix_nano", "TSV")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("conv-1\t%d\t1\nconv-1\t%d\t1\n", t0, t0+int64(time.Minute)), out)
}

// TestColdRecordsCountOnceAfterRebatchOnChDB: the cold queue merged requests a and b and the
// writer inserted them, then the collector was killed before the queue marked them done; after
// the restart the queue sends b again, merged this time with c. The cold totals (ColdReader) are
// those of a, b and c each counted once: each request's partials are their own insert, whose
// insert_deduplication_token is that request's batch id, so the server drops b's second insert
// (before, a merged write was one insert under the id of the set, and b counted twice).
func TestColdRecordsCountOnceAfterRebatchOnChDB(t *testing.T) {
	ctx := context.Background()
	_, db := openChDB(t)
	schema := Schema{Database: "runagain"}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}
	require.NoError(t, w.CreateCold(ctx))
	req := func(runs ...storetest.Run) store.Records {
		return w.ColdRecords(storetest.Traces(runs...), plog.Logs{})
	}
	merged := func(rs ...store.Records) store.Records {
		var out store.Records
		for _, r := range rs {
			out.Append(r)
		}
		return out
	}
	a, b, c := req(runA), req(runB), req(runC)
	require.NoError(t, w.WriteColdRecords(ctx, merged(a, b)))
	require.NoError(t, w.WriteColdRecords(ctx, merged(b, c)), "b again after the crash, merged with c")
	require.NoError(t, w.WriteColdRecords(ctx, merged(a, b)), "and the first merge retried as it was")

	got, err := (&ColdReader{DB: db, Schema: schema}).Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	want := store.MergePartials(merged(a, b, c).Partials)
	require.Len(t, got, len(want))
	bySession := map[string]store.RunSummary{}
	for _, r := range got {
		bySession[r.SessionID] = r
	}
	for _, s := range want {
		r := bySession[s.SessionID]
		assert.Equal(t, s.Spans, r.Spans, s.SessionID)
		assert.Equal(t, s.InputTokens, r.InputTokens, s.SessionID)
		assert.Equal(t, s.OutputTokens, r.OutputTokens, s.SessionID)
		assert.InDelta(t, s.CostUSD, r.CostUSD, 1e-12, s.SessionID)
		assert.Equal(t, s.Errors, r.Errors, s.SessionID)
		assert.ElementsMatch(t, s.TraceIDs, r.TraceIDs, s.SessionID)
	}
	assert.EqualValues(t, runA.Spans()+runB.Spans(), bySession["conv-1"].Spans, "conv-1: runs a and b once each")
}
