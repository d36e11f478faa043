// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestSessionsCostFromRunIndex: over a real hot SQLite file of 300 runs of different costs (0 to
// 5 LLM calls on two priced models and one unpriced), the sort by cost and the cost filter, which
// read the run index's cost, list the same runs in the same order as reading every run's detail
// (the path before: arrange each run and compare its cost), and read no run's detail to do so.
func TestSessionsCostFromRunIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := sqlitestore.Open(path, sqlitestore.Options{})
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	models := []string{"gpt-4.1", "gpt-4.1-mini", "no-such-model"}
	td := ptrace.NewTraces()
	for i := 0; i < 300; i++ {
		storetest.Add(td, storetest.Run{Seed: fmt.Sprintf("c-%d", i), Service: "svc", Agent: "a", Model: models[i%3],
			LLMCalls: i % 6, ToolFail: i%5 == 0, Start: t0 + int64(i)*int64(time.Minute)})
	}
	_, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()

	// The reference: every run's detail, newest first, sorted stably by the detail's cost.
	ref, err := New(Options{Reader: r, PageSize: 1000})
	require.NoError(t, err)
	defer ref.Close()
	var all []sessionRow
	require.NoError(t, store.EachRun(ctx, r, store.RunFilter{}, func(sum store.RunSummary) bool {
		all = append(all, sessionRow{RunSummary: sum, D: ref.detail(ctx, sum)})
		return true
	}))
	require.Len(t, all, 300)
	ids := func(rows []sessionRow) []string {
		out := make([]string, len(rows))
		for i, row := range rows {
			out[i] = row.TraceID
		}
		return out
	}
	byDetail := func(desc bool) []string {
		rows := append([]sessionRow(nil), all...)
		sort.SliceStable(rows, func(i, j int) bool {
			if desc {
				return rows[j].D.CostUSD < rows[i].D.CostUSD
			}
			return rows[i].D.CostUSD < rows[j].D.CostUSD
		})
		return ids(rows)
	}
	distinctCosts := map[float64]bool{}
	for _, row := range all {
		distinctCosts[row.D.CostUSD] = true
	}
	require.Greater(t, len(distinctCosts), 3, "the seeded runs differ in cost (and tie: ties list newest first)")

	ranks := &rankCounter{DB: r}
	for _, desc := range []bool{true, false} {
		s, err := New(Options{Reader: ranks, PageSize: 40})
		require.NoError(t, err)
		want := byDetail(desc)
		var got []string
		for p := 1; p <= 8; p++ {
			page, n, _, err := s.sessions(ctx, SessionsFilter{Sort: "cost", Asc: !desc, Page: p}, time.Time{}, time.Time{})
			require.NoError(t, err)
			assert.Equal(t, 300, n)
			got = append(got, ids(page)...)
			assert.Equal(t, len(got), s.details.Len(), "details read for the listed runs only")
			for _, row := range page {
				assert.InDelta(t, row.D.CostUSD, row.CostUSD, 1e-12, "the page shows the cost it sorted by")
			}
		}
		assert.Equal(t, want, got, "sort=cost desc=%v: same runs in the same order as by each run's detail", desc)
		s.Close()
	}
	assert.Equal(t, 16, ranks.calls, "each page ranked by the run index (store.RankedRuns)")

	cut := 0.0 // the cheapest priced run: the filter keeps the dearer ones
	for _, row := range all {
		if c := row.D.CostUSD; c > 0 && (cut == 0 || c < cut) {
			cut = c
		}
	}
	require.Positive(t, cut)
	var want []string
	for _, row := range all {
		if row.D.CostUSD > cut {
			want = append(want, row.TraceID)
		}
	}
	require.NotEmpty(t, want)
	s, err := New(Options{Reader: r, PageSize: 1000})
	require.NoError(t, err)
	defer s.Close()
	page, n, _, err := s.sessions(ctx, SessionsFilter{CostMin: cut, Page: 1}, time.Time{}, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, len(want), n)
	assert.Equal(t, want, ids(page), "cost_min: the runs whose detail costs more, newest first")
	assert.Equal(t, len(page), s.details.Len(), "only the listed runs' details were read")
}

// rankCounter is a SQLite hot file that counts its ranked listings (store.RankedRunLister).
type rankCounter struct {
	*sqlitestore.DB
	calls int
}

func (c *rankCounter) RankedRuns(ctx context.Context, f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
	c.calls++
	return c.DB.RankedRuns(ctx, f, o)
}
