//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// aggregated lists f the way the warm tier did before the run index: every summary aggregated.
func aggregated(ctx context.Context, t *testing.T, r *WarmReader, f store.RunFilter) []store.RunSummary {
	t.Helper()
	rows, err := r.DB.QueryContext(ctx, r.RunsQuery(f))
	require.NoError(t, err)
	out, err := scanSummaries(rows, store.TierWarm, true)
	require.NoError(t, err)
	return out
}

// sameRuns compares two listings: costs within 1e-12 USD (sums in another order), the rest exactly.
func sameRuns(t *testing.T, want, got []store.RunSummary, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		assert.InDelta(t, want[i].CostUSD, got[i].CostUSD, 1e-12, msg)
		w, g := want[i], got[i]
		w.CostUSD, g.CostUSD = 0, 0
		assert.Equal(t, w, g, msg)
	}
}

// TestRunIndexOnChDB: the warm tier's run index (runagain_runs fed by its materialised view)
// lists what aggregating the summaries lists, for every filter, with duplicated inserts; an older
// database without it is backfilled by CreateWarm; an erasure removes its rows.
func TestRunIndexOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	db, err := OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	defer db.Close()
	schema := Schema{Database: "ri", WarmTTL: 90 * 24 * time.Hour}
	w := &Writer{DB: db, Schema: schema, Now: func() time.Time { return time.Unix(0, t0) }}

	// An older deployment: the warm tables without the index, already holding runs a and b.
	require.NoError(t, w.exec(ctx, append([]string{schema.DatabaseDDL()}, schema.WarmDDL()...)))
	require.NoError(t, w.WriteWarmTraces(ctx, storetest.Traces(runA, runB)))
	r := &WarmReader{DB: db, Schema: schema}
	before, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err, "no index: listed by aggregation")
	require.Len(t, before, 2)

	require.NoError(t, w.CreateWarm(ctx), "creates the index and backfills it")
	require.NoError(t, w.CreateWarm(ctx), "idempotent, no second backfill")
	require.NoError(t, w.WriteWarmTraces(ctx, storetest.Traces(runC, runA)), "run a again: an at-least-once retry")
	require.NoError(t, w.WriteWarmTraces(ctx, storetest.Traces(runB)))
	out, err := srv.Query("SELECT count() FROM ri.runagain_runs", "TSV")
	require.NoError(t, err)
	assert.NotEqual(t, "3\n", out, "partial rows not merged yet: readers fold them")

	mid := time.Unix(0, t0+int64(30*time.Minute))
	for _, f := range []store.RunFilter{{}, {Limit: 1}, {Limit: 2}, {Since: mid}, {Until: mid}, {Since: mid, Limit: 1},
		{SessionID: "conv-1"}, {SessionID: "conv-1", Limit: 1}, {SessionID: storetest.TraceID("c").String()}, {SessionID: "nope"}} {
		rows, err := db.QueryContext(ctx, r.IndexedRunsQuery(f))
		require.NoError(t, err, "the index query runs (no fallback)")
		indexed, err := r.scanIndexed(ctx, rows)
		require.NoError(t, err)
		sameRuns(t, aggregated(ctx, t, r, f), indexed, "filter "+r.IndexedRunsQuery(f))
		got, err := r.Runs(ctx, f)
		require.NoError(t, err)
		assert.Equal(t, indexed, got)
	}
	all, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.EqualValues(t, runA.Spans(), all[2].Spans, "run a written twice counts its spans once")
	assert.EqualValues(t, 200, all[2].InputTokens)

	_, err = srv.Query("OPTIMIZE TABLE ri.runagain_runs FINAL", "TSV")
	require.NoError(t, err)
	out, err = srv.Query("SELECT count() FROM ri.runagain_runs", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "3\n", out, "merged: one row per run")
	merged, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	sameRuns(t, all, merged, "after merging")

	e := &WarmEraser{DB: db, Schema: schema}
	_, err = e.Erase(ctx, store.Erasure{Session: "conv-1", TraceIDs: []string{storetest.TraceID("a").String(), storetest.TraceID("b").String()}})
	require.NoError(t, err)
	left, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, storetest.TraceID("c").String(), left[0].TraceID)
	out, err = srv.Query("SELECT count() FROM ri.runagain_runs WHERE session_id = 'conv-1'", "TSV")
	require.NoError(t, err)
	assert.Equal(t, "0\n", out, "the session's runs left the index")
}
