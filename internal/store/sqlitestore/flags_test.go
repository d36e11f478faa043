// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// flaggedFixture writes 120 runs to hot: every 7th with an alert, every 11th with a divergence
// record (two for every 22nd, one of them before the run's spans arrived), and returns them.
func flaggedFixture(t *testing.T, hot *DB) []storetest.Run {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var runs []storetest.Run
	td := ptrace.NewTraces()
	for i := 0; i < 120; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("f-%d", i), Service: "svc", Agent: "a", Model: "gpt-4.1", LLMCalls: 1,
			Start: t0 + int64(i)*int64(time.Minute)}
		runs = append(runs, r)
		if i%22 == 0 {
			require.NoError(t, hot.WriteLogs(ctx, storetest.Divergence(r, "diverged at request 1"))) // before its spans
		}
		storetest.Add(td, r)
	}
	_, err := hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	for i, r := range runs {
		if i%7 == 0 {
			require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(r, "loop")))
		}
		if i%11 == 0 {
			require.NoError(t, hot.WriteLogs(ctx, storetest.Divergence(r, "diverged at request 2")))
		}
	}
	return runs
}

// wantFlagged is the newest-first ids of the runs flaggedFixture flags.
func wantFlagged(t *testing.T, r store.Reader) []string {
	t.Helper()
	all, err := r.Runs(context.Background(), store.RunFilter{})
	require.NoError(t, err)
	var out []string
	for _, row := range all {
		if row.Alerts > 0 || row.Divergences > 0 {
			out = append(out, row.TraceID)
		}
	}
	return out
}

func traceIDs(rows []store.RunSummary) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.TraceID
	}
	return out
}

// TestRunIndexCountsDivergences: the hot run index counts each run's divergence records (one
// that came before the run's spans too, and a deleted one no more), and the alerts filter
// (RunFilter.Flagged) lists exactly the runs with an alert or a divergence, newest first, a page
// at a time, on runs_flagged and without a sort.
func TestRunIndexCountsDivergences(t *testing.T) {
	ctx := context.Background()
	_, hot, warm := openHotWarm(t)
	runs := flaggedFixture(t, hot)
	all, err := hot.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	byID := map[string]store.RunSummary{}
	for _, r := range all {
		byID[r.TraceID] = r
	}
	flagged := 0
	for i, r := range runs {
		row := byID[storetest.TraceID(r.Seed).String()]
		want := int64(0)
		switch {
		case i%22 == 0:
			want = 2
		case i%11 == 0:
			want = 1
		}
		assert.Equal(t, want, row.Divergences, "run %d", i)
		if i%7 == 0 || i%11 == 0 {
			flagged++
		}
	}
	want := wantFlagged(t, hot)
	require.Len(t, want, flagged) // 18 + 11 - 2

	got, err := hot.Runs(ctx, store.RunFilter{Flagged: true})
	require.NoError(t, err)
	assert.Equal(t, want, traceIDs(got))
	var paged []string
	require.NoError(t, store.EachRun(ctx, hot, store.RunFilter{Flagged: true}, func(r store.RunSummary) bool {
		paged = append(paged, r.TraceID)
		return true
	}))
	assert.Equal(t, want, paged)
	ranked, err := hot.RankedRuns(ctx, store.RunFilter{Flagged: true, Limit: 5}, store.RunOrder{Key: store.OrderCost})
	require.NoError(t, err)
	assert.Len(t, ranked, 5)
	for _, r := range ranked {
		assert.True(t, r.Alerts > 0 || r.Divergences > 0)
	}

	f := store.RunFilter{Flagged: true, Limit: 20}
	via, err := pickIndex(ctx, hot.db, f, store.RunOrder{}, hot.ranks)
	require.NoError(t, err)
	assert.Equal(t, "runs_flagged", via)
	q, args := rankedRunsQuery(f, store.RunOrder{}, via)
	plan := queryPlan(t, hot.db, q, args...)
	assert.Contains(t, plan, "USING INDEX runs_flagged")
	assert.NotContains(t, plan, "TEMP B-TREE")

	// A deleted divergence record is no longer counted (the trigger), nor its run flagged
	// when it was its only one.
	only := storetest.TraceID(runs[11].Seed).String()
	_, err = hot.db.ExecContext(ctx, `DELETE FROM logs WHERE trace_id = ? AND event_name = ?`, only, runagainattr.EventDivergence)
	require.NoError(t, err)
	got, err = hot.Runs(ctx, store.RunFilter{Flagged: true})
	require.NoError(t, err)
	assert.NotContains(t, traceIDs(got), only)
	assert.Len(t, got, flagged-1)

	// The warm file keeps no divergence record: its flagged runs are those with alerts.
	td := ptrace.NewTraces()
	for _, r := range runs {
		storetest.Add(td, r)
	}
	require.NoError(t, warm.WriteTraces(ctx, td))
	require.NoError(t, warm.WriteLogs(ctx, storetest.Alert(runs[7], "loop")))
	wf, err := warm.Runs(ctx, store.RunFilter{Flagged: true})
	require.NoError(t, err)
	assert.Equal(t, []string{storetest.TraceID(runs[7].Seed).String()}, traceIDs(wf))
}

// TestDivergencesAddedOnOpen: a hot file of schema version 8 (no divergences column, no
// runs_flagged) read-only lists its runs as before, counting no divergence and filtering alerts
// in Go (FiltersRunIndex false); opened for writing it gains the column, counted from its log
// records, and the index.
func TestDivergencesAddedOnOpen(t *testing.T) {
	ctx := context.Background()
	dir, hot, _ := openHotWarm(t)
	flaggedFixture(t, hot)
	want := wantFlagged(t, hot)
	_, err := hot.db.ExecContext(ctx, `DROP INDEX runs_flagged; DROP TRIGGER logs_runs_divergence_delete;
	  ALTER TABLE runs DROP COLUMN divergences; PRAGMA user_version = 8`)
	require.NoError(t, err)
	require.NoError(t, hot.Close())

	ro, err := Open(filepath.Join(dir, "hot.db"), Options{ReadOnly: true})
	require.NoError(t, err)
	assert.False(t, ro.FiltersRunIndex(), "no divergences column: the alerts filter is not the index's")
	rows, err := ro.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 120)
	for _, r := range rows {
		assert.Zero(t, r.Divergences)
	}
	require.NoError(t, ro.Close())

	rw, err := Open(filepath.Join(dir, "hot.db"), Options{})
	require.NoError(t, err)
	defer rw.Close()
	assert.True(t, rw.FiltersRunIndex())
	assert.True(t, rw.ranks, "runs_flagged is created with the column")
	got, err := rw.Runs(ctx, store.RunFilter{Flagged: true})
	require.NoError(t, err)
	assert.Equal(t, want, traceIDs(got), "divergences counted from the stored records")
}
