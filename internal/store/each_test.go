// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

// EachRun gives exactly the runs of the unpaged listing, in its order, while never asking a
// reader for more than a page (plus the runs tied at the page boundary): here 2,600 runs, 700 of
// them started at one instant across a page boundary, through the hot and warm tiers of Tiered.
func TestEachRunPagesThroughTiesAndTiers(t *testing.T) {
	ctx := context.Background()
	hot, warm := &limited{}, &limited{}
	base := time.Unix(0, t0).UTC()
	for i := 2599; i >= 0; i-- {
		start := base.Add(time.Duration(i) * time.Second)
		if i >= 1000 && i < 1700 {
			start = base.Add(1000 * time.Second) // 700 runs start together
		}
		r := store.RunSummary{TraceID: fmt.Sprintf("%032x", i), SessionID: fmt.Sprintf("s%d", i%5), Start: start, Errors: int64(i % 7)}
		if i >= 1300 {
			r.Tier = "hot"
			hot.rows = append(hot.rows, r)
		} else {
			r.Tier = "warm"
			warm.rows = append(warm.rows, r)
		}
	}
	store.SortRuns(hot.rows)
	store.SortRuns(warm.rows)
	rd := store.NewTiered(hot, warm)
	for _, f := range []store.RunFilter{
		{},
		{SessionID: "s3"},
		{Since: base.Add(500 * time.Second), Until: base.Add(2000 * time.Second)},
		{Limit: 1234},
	} {
		want, err := rd.Runs(ctx, f)
		require.NoError(t, err)
		hot.asked, warm.asked = nil, nil
		var got []store.RunSummary
		require.NoError(t, store.EachRun(ctx, rd, f, func(r store.RunSummary) bool { got = append(got, r); return true }))
		require.Equal(t, len(want), len(got), "%+v", f)
		for i := range want {
			require.Equal(t, want[i].TraceID, got[i].TraceID, "row %d of %+v", i, f)
		}
		for _, a := range append(hot.asked, warm.asked...) {
			assert.LessOrEqual(t, a.Limit, store.EachRunPage+700, "a page asked for %d rows", a.Limit)
			assert.Positive(t, a.Limit, "never an unbounded listing")
		}
	}

	// fn stops the walk
	n := 0
	require.NoError(t, store.EachRun(ctx, rd, store.RunFilter{}, func(store.RunSummary) bool { n++; return n < 3 }))
	assert.Equal(t, 3, n)

	// a cancelled context ends it with its error
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, store.EachRun(cctx, rd, store.RunFilter{}, func(store.RunSummary) bool { return true }), context.Canceled)
}
