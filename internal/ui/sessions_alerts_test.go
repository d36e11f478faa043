// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// runReader hides every optional interface of the store it wraps: the sessions page then reads
// each run to filter it, the path before the divergence list.
type runReader struct{ store.Reader }

// TestSessionsAlertsFromRunIndex: over real hot and warm SQLite files (store.Tiered, as the CLI
// opens them) of 200 runs, some with an agent_guard alert, some with a replay divergence record,
// one with both, the alerts filter reads the run index's alert counts and the hot file's runs with
// a divergence record, and lists the same runs, newest first, as reading every run's detail does;
// it reads the detail of the listed runs only.
func TestSessionsAlertsFromRunIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{})
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	td := ptrace.NewTraces()
	var runs []storetest.Run
	for i := 0; i < 200; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("a-%d", i), Service: "svc", Agent: "a", Model: "gpt-4.1", LLMCalls: 1 + i%3,
			Start: t0 + int64(i)*int64(time.Minute)}
		runs = append(runs, r)
		storetest.Add(td, r)
	}
	_, err = hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, warm.WriteTraces(ctx, td))
	for i, r := range runs {
		if i%7 == 0 {
			ld := storetest.Alert(r, "loop")
			require.NoError(t, hot.WriteLogs(ctx, ld))
			require.NoError(t, warm.WriteLogs(ctx, ld))
		}
		if i%11 == 0 {
			// replay sends it; the warm file keeps none
			require.NoError(t, hot.WriteLogs(ctx, storetest.Divergence(r, "diverged at request 2")))
		}
	}
	tiered := store.NewTiered(hot, warm)
	defer tiered.Close()

	ids := func(rows []sessionRow) []string {
		out := make([]string, len(rows))
		for i, row := range rows {
			out[i] = row.TraceID
		}
		return out
	}
	ref, err := New(Options{Reader: runReader{tiered}, PageSize: 1000})
	require.NoError(t, err)
	defer ref.Close()
	want, n, _, err := ref.sessions(ctx, SessionsFilter{Alerts: true, Page: 1}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, 200, ref.details.Len(), "the reference read every run")
	// i%7 == 0 or i%11 == 0 for i in 0..199: 29 + 19 - 3
	require.Equal(t, 45, n)

	s, err := New(Options{Reader: tiered, PageSize: 20})
	require.NoError(t, err)
	defer s.Close()
	var got []string
	for p := 1; p <= 3; p++ {
		page, n, _, err := s.sessions(ctx, SessionsFilter{Alerts: true, Page: p}, time.Time{}, time.Time{})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, len(got)+len(page))
		for _, row := range page {
			assert.Positive(t, row.D.Alerts+row.D.Divergences, "run %s is listed for an alert or a divergence", row.TraceID)
		}
		got = append(got, ids(page)...)
		assert.Equal(t, len(got), s.details.Len(), "details read for the listed runs only")
	}
	assert.Equal(t, ids(want), got, "the same runs in the same order as by each run's detail")

	diverged, err := tiered.DivergedRuns(ctx)
	require.NoError(t, err)
	assert.Len(t, diverged, 19)
}
