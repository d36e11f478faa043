// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestPatternsIndexedAtWrite writes runs to the hot and the warm file (failing tools, an alert,
// a run whose root arrives last) and checks that the signatures are in the index after the
// writes (computed when indexed, not when listed), and what patterns.List makes of them.
func TestPatternsIndexedAtWrite(t *testing.T) {
	ctx := context.Background()
	runs := indexRuns() // 0, 4, 8 have a failing tool
	hot, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer hot.Close()
	warm, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{})
	require.NoError(t, err)
	defer warm.Close()

	late := runs[11]
	children, root := splitChildrenFirst(late)
	for _, r := range runs[:11] {
		_, err := hot.WriteTraces(ctx, storetest.Traces(r))
		require.NoError(t, err)
		require.NoError(t, warm.WriteTraces(ctx, storetest.Traces(r)))
	}
	_, err = hot.WriteTraces(ctx, children)
	require.NoError(t, err)
	require.NoError(t, warm.WriteTraces(ctx, children))
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))
	require.NoError(t, warm.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))

	for name, db := range map[string]interface {
		store.PatternReader
	}{"hot": hot, "warm": warm} {
		sqlDB := hot.SQL()
		if name == "warm" {
			sqlDB = warm.SQL()
		}
		var stored, dirty int
		require.NoError(t, sqlDB.QueryRow(`SELECT COUNT(*), COALESCE(SUM(dirty > 0), 0) FROM run_patterns`).Scan(&stored, &dirty))
		assert.Equal(t, 4, stored, "%s: the three failing tools and the alerted run have a signature row", name)
		assert.Equal(t, 0, dirty, "%s: computed when written", name)

		rep, err := patterns.List(ctx, db, store.PatternFilter{})
		require.NoError(t, err)
		assert.Equal(t, int64(12), rep.Runs, name)
		assert.Equal(t, int64(5), rep.Failing, "%s: 3 tool failures, 1 alert, 1 incomplete", name)
		require.Len(t, rep.Patterns, 3, name)
		p := rep.Patterns[0]
		assert.Equal(t, int64(3), p.Runs, name)
		assert.Equal(t, `tool get_weather: TimeoutError "timeout"`, p.Title, name)
		assert.Equal(t, []string{"a"}, p.Agents, name)
		assert.Len(t, p.Examples, 3, name)
		titles := []string{rep.Patterns[1].Title, rep.Patterns[2].Title}
		assert.ElementsMatch(t, []string{"alert loop", "incomplete (no_root, orphans)"}, titles, name)

		show, got, err := patterns.Show(ctx, db, p.ID, store.PatternFilter{Since: time.Unix(0, runs[4].Start)})
		require.NoError(t, err)
		assert.Equal(t, int64(2), show.Runs, "%s: runs 4 and 8 are in the range", name)
		assert.Len(t, got, 2, name)

		checkPatternFilter(t, db, name+": signed")
		// A run marked and not signed again, one signed by another version under a pattern id
		// that no longer exists, one with no row (written before signatures were kept): each is
		// signed on the spot and found in its pattern.
		_, err = sqlDB.Exec(`UPDATE run_patterns SET dirty = 1, pattern_id = '' WHERE trace_id = ?`, storetest.TraceID(runs[0].Seed).String())
		require.NoError(t, err)
		_, err = sqlDB.Exec(`UPDATE run_patterns SET version = version - 1, pattern_id = 'pold' WHERE trace_id = ?`, storetest.TraceID(runs[4].Seed).String())
		require.NoError(t, err)
		_, err = sqlDB.Exec(`DELETE FROM run_patterns WHERE trace_id = ?`, storetest.TraceID(runs[8].Seed).String())
		require.NoError(t, err)
		checkPatternFilter(t, db, name+": stale")
	}

	// The root arrives: the run is complete and passing, and leaves its pattern.
	_, err = hot.WriteTraces(ctx, root)
	require.NoError(t, err)
	rep, err := patterns.List(ctx, hot, store.PatternFilter{})
	require.NoError(t, err)
	assert.Equal(t, int64(4), rep.Failing)

	// Tiered lists each run once.
	rep, err = patterns.List(ctx, store.NewTiered(hot, warm), store.PatternFilter{})
	require.NoError(t, err)
	assert.Equal(t, int64(12), rep.Runs)
}

// TestPatternsOfAnOlderSignatureVersion stores runs whose index rows were written by an older
// SignatureVersion (a store from before an upgrade, the rows' pattern ids stale) and checks
// that listing recomputes them: the old runs fall in the same patterns, with the same ids, as
// the same runs indexed by this version.
func TestPatternsOfAnOlderSignatureVersion(t *testing.T) {
	ctx := context.Background()
	runs := indexRuns()
	open := func() *DB {
		db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		for _, r := range runs {
			_, err := db.WriteTraces(ctx, storetest.Traces(r))
			require.NoError(t, err)
		}
		return db
	}
	current, old := open(), open()
	res, err := old.SQL().Exec(`UPDATE run_patterns SET version = ?, pattern_id = 'pstale', variant_id = 'vstale'`,
		patterns.SignatureVersion-1)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "the three failing tools have rows")

	want, err := patterns.List(ctx, current, store.PatternFilter{})
	require.NoError(t, err)
	got, err := patterns.List(ctx, old, store.PatternFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, want.Patterns)
	require.Len(t, got.Patterns, len(want.Patterns))
	for i := range want.Patterns {
		assert.Equal(t, want.Patterns[i].ID, got.Patterns[i].ID)
		assert.Equal(t, want.Patterns[i].Runs, got.Patterns[i].Runs)
		assert.NotEqual(t, "pstale", got.Patterns[i].ID)
	}
}

// TestPatternsSignedWhenReadWithNoSignatures: with Options.NoSignatures (runagain_storage
// failure_signatures: read) the writers store no signature, and the listing, which signs the
// failing runs on the spot, is the one of files signed at ingest.
func TestPatternsSignedWhenReadWithNoSignatures(t *testing.T) {
	ctx := context.Background()
	runs := indexRuns()
	type file interface {
		store.PatternReader
		SQL() *sql.DB
	}
	open := func(no bool) (file, file) {
		hot, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{NoSignatures: no})
		require.NoError(t, err)
		t.Cleanup(func() { hot.Close() })
		warm, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{NoSignatures: no})
		require.NoError(t, err)
		t.Cleanup(func() { warm.Close() })
		for _, r := range runs {
			_, err := hot.WriteTraces(ctx, storetest.Traces(r))
			require.NoError(t, err)
			require.NoError(t, warm.WriteTraces(ctx, storetest.Traces(r)))
		}
		require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))
		require.NoError(t, warm.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))
		return hot, warm
	}
	hotOn, warmOn := open(false)
	hotOff, warmOff := open(true)
	for name, pair := range map[string][2]file{"hot": {hotOn, hotOff}, "warm": {warmOn, warmOff}} {
		var n int
		require.NoError(t, pair[1].SQL().QueryRow(`SELECT COUNT(*) FROM run_patterns`).Scan(&n))
		assert.Zero(t, n, "%s: nothing signed when written", name)
		want, err := patterns.List(ctx, pair[0], store.PatternFilter{})
		require.NoError(t, err)
		got, err := patterns.List(ctx, pair[1], store.PatternFilter{})
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
		assert.EqualValues(t, 4, got.Failing, "%s: 3 tool failures and the alerted run", name)
	}
}

// checkPatternFilter checks that PatternRuns with a PatternID streams exactly the runs, in the
// same order, that PatternRuns without one puts in that pattern, for each pattern of db, and
// with TraceIDs those of them it names.
func checkPatternFilter(t *testing.T, db store.PatternReader, msg string) {
	t.Helper()
	ctx := context.Background()
	byPattern := map[string][]string{}
	var order []string
	require.NoError(t, db.PatternRuns(ctx, store.PatternFilter{}, func(r store.PatternRun) error {
		if r.PatternID != "" {
			byPattern[r.PatternID] = append(byPattern[r.PatternID], r.TraceID)
		}
		order = append(order, r.TraceID)
		return nil
	}))
	require.GreaterOrEqual(t, len(byPattern), 3, msg)
	for id, want := range byPattern {
		var got []string
		require.NoError(t, db.PatternRuns(ctx, store.PatternFilter{PatternID: id}, func(r store.PatternRun) error {
			assert.Equal(t, id, r.PatternID, msg)
			got = append(got, r.TraceID)
			return nil
		}))
		assert.Equal(t, want, got, "%s: pattern %s", msg, id)
		got = nil
		require.NoError(t, db.PatternRuns(ctx, store.PatternFilter{PatternID: id, TraceIDs: append([]string{want[0]}, order...)[:2]}, func(r store.PatternRun) error {
			got = append(got, r.TraceID)
			return nil
		}))
		assert.Contains(t, got, want[0], "%s: pattern %s looked up by id", msg, id)
	}
}
