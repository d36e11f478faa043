// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestTieredRanksLikeTheWalk: over a real hot file (the newest runs), a real warm file (every
// run) and a cold tier of session rows (one whose runs the warm file still holds, the most
// expensive row, and one that started before the warm file's oldest run), the walk with the
// cost and error filters pushed into the SQLite tiers lists what filtering the unfiltered walk
// lists, and the tiers' ranked listing gives, for every order, filter and limit, exactly the first
// rows of every run listed once (EachRun through Tiered, the sessions page's walk) sorted by
// store.RunOrder.Less; and it says it cannot rank when a per-run tier cannot.
func TestTieredRanksLikeTheWalk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer hot.Close()
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer warm.Close()
	models := []string{"gpt-4.1", "claude-sonnet-4", "gpt-4o-mini"}
	var runs []storetest.Run
	for i := 0; i < 30; i++ {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("rk-%d", i), Session: fmt.Sprintf("conv-%d", i%4), Service: "svc",
			Model: models[i%3], Start: t0 + int64(i)*int64(time.Minute), LLMCalls: 1 + i%4, ToolFail: i%5 == 0})
	}
	_, err = hot.WriteTraces(ctx, storetest.Traces(runs[20:]...))
	require.NoError(t, err)
	require.NoError(t, warm.WriteTraces(ctx, storetest.Traces(runs...)))

	at := func(m int) time.Time { return time.Unix(0, t0).Add(time.Duration(m) * time.Minute).UTC() }
	covered := storetest.TraceID("rk-3").String()
	cold := &sessions{limited{rows: []store.RunSummary{
		// still in the warm file: listed from there, never as a session row
		{SessionID: "conv-3", TraceID: covered, TraceIDs: []string{covered}, Start: at(3), CostUSD: 9, Errors: 1, Tier: "cold"},
		// only the cold tier holds it: the most expensive run of all
		{SessionID: "old", TraceID: "f0000000000000000000000000000001", TraceIDs: []string{"f0000000000000000000000000000001"},
			Start: at(-100), End: at(-90), CostUSD: 5, InputTokens: 10, Errors: 2, Tier: "cold"},
	}}}
	tiers := store.NewTiered(hot, warm, cold)
	assert.True(t, tiers.FiltersRunIndex())

	var walked []store.RunSummary
	require.NoError(t, store.EachRun(ctx, tiers, store.RunFilter{}, func(r store.RunSummary) bool {
		walked = append(walked, r)
		return true
	}))
	require.Len(t, walked, 31, "30 runs and the cold session")
	cheap, dearest := 1e9, 0.0 // the cheapest priced run and the dearest run of the per-run tiers
	for _, r := range walked {
		if r.CostUSD > 0 && r.CostUSD < cheap {
			cheap = r.CostUSD
		}
		if r.Tier != "cold" {
			dearest = max(dearest, r.CostUSD)
		}
	}
	require.Less(t, dearest, 5.0, "the session rows cost more than any run")

	var fs []store.RunFilter
	for _, f := range []store.RunFilter{{}, {Since: at(10)}, {Until: at(25)}, {SessionID: "conv-1"}, {SessionID: "old"}, {SessionID: "conv-3"}} {
		c, e := f, f
		c.MinCostUSD, e.ErrorsOnly = cheap, true
		fs = append(fs, f, c, e)
	}
	// Above every run: only the session rows pass, and of those only the one no per-run tier
	// holds a run of.
	fs = append(fs, store.RunFilter{MinCostUSD: dearest})
	for _, f := range fs {
		// The walk with the filter pushed into the SQLite tiers lists what filtering the
		// unfiltered walk lists (newest first).
		var want, got []store.RunSummary
		for _, r := range walked {
			if f.Keep(r) {
				want = append(want, r)
			}
		}
		require.NoError(t, store.EachRun(ctx, tiers, f, func(r store.RunSummary) bool {
			got = append(got, r)
			return true
		}))
		assert.Equal(t, want, got, "walk with filter %+v", f)
		if f.MinCostUSD == dearest {
			require.Len(t, got, 1)
			assert.Equal(t, "old", got[0].SessionID)
		}
		for _, k := range store.RunOrders {
			for _, o := range []store.RunOrder{{Key: k}, {Key: k, Asc: true}} {
				for _, limit := range []int{1, 4, 40} {
					var want []store.RunSummary
					for _, r := range walked {
						if f.Keep(r) {
							want = append(want, r)
						}
					}
					o.Sort(want)
					want = want[:min(limit, len(want))]
					ff := f
					ff.Limit = limit
					got, err := store.RankedRuns(ctx, tiers, ff, o)
					require.NoError(t, err)
					assert.Equal(t, want, got, "filter %+v, order %+v", ff, o)
				}
			}
		}
	}

	// A per-run tier that cannot rank (no run index): the caller is told to walk.
	_, err = store.RankedRuns(ctx, store.NewTiered(hot, &limited{}), store.RunFilter{Limit: 3}, store.RunOrder{Key: store.OrderCost})
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	_, err = store.RankedRuns(ctx, tiers, store.RunFilter{}, store.RunOrder{Key: store.OrderCost})
	assert.ErrorContains(t, err, "want a positive limit")
}

// TestEachRunFiltersForAReaderThatDoesNot: a reader that does not apply the index-only filters
// (store.RunIndexFilterer) is asked without them, and EachRun applies them to its rows, so a
// page of rows that do not match never ends the walk early.
func TestEachRunFiltersForAReaderThatDoesNot(t *testing.T) {
	ctx := context.Background()
	l := &limited{}
	for i := 1200; i > 0; i-- {
		r := store.RunSummary{TraceID: fmt.Sprintf("t%04d", i), Start: time.Unix(0, t0).Add(time.Duration(i) * time.Second)}
		if i%400 == 0 {
			r.CostUSD, r.Errors = 1, 1
		}
		l.rows = append(l.rows, r)
	}
	var got []string
	require.NoError(t, store.EachRun(ctx, store.NewTiered(l), store.RunFilter{MinCostUSD: 0.5, ErrorsOnly: true}, func(r store.RunSummary) bool {
		got = append(got, r.TraceID)
		return true
	}))
	assert.Equal(t, []string{"t1200", "t0800", "t0400"}, got)
	for _, f := range l.asked {
		assert.Zero(t, f.MinCostUSD)
		assert.False(t, f.ErrorsOnly)
	}
}
