// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"time"
)

// EachRunPage is how many run summaries EachRun asks a Reader for at a time: the most it holds
// in memory at once (plus the runs that share one start time at a page boundary).
const EachRunPage = 500

// EachRun calls fn with every run r lists that matches f, newest first (the order of
// Reader.Runs), until fn returns false, f.Limit runs were given (0: no limit) or the runs run
// out. f's index-only fields (MinCostUSD, ErrorsOnly, Flagged) go to a reader that applies them
// (RunIndexFilterer) and are checked here for any other. It reads them in pages of EachRunPage
// through Runs itself (keyset paging: each page asks for the runs that started no later than the
// last one given, skipping those already given),
// so memory stays bounded by the page whatever the store holds, and a reader whose listing
// uses its run index (the SQLite hot and warm tiers, ClickHouse) reads only the index rows the
// pages need. Errors: the first error of Runs or ctx, as is.
//
// A cold-tier row (a whole session) whose runs an earlier page already listed from a newer tier
// can be given again: Tiered drops such rows within one page only.
func EachRun(ctx context.Context, r Reader, f RunFilter, fn func(RunSummary) bool) error {
	limit := f.Limit
	given := 0
	// boundary: the start of the last run given; atBoundary: the runs given that started then,
	// which the next page, reading from that start on, lists again first.
	var boundary time.Time
	atBoundary := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		sub := f.forReader(r)
		sub.Limit = EachRunPage + len(atBoundary)
		if !boundary.IsZero() {
			sub.Until = boundary.Add(time.Nanosecond) // started at or before the boundary
		}
		rows, err := r.Runs(ctx, sub)
		if err != nil {
			return err
		}
		fresh := 0
		for _, row := range rows {
			if !boundary.IsZero() && row.Start.Equal(boundary) && atBoundary[row.TraceID] {
				continue
			}
			fresh++
			if !row.Start.Equal(boundary) {
				boundary = row.Start
				clear(atBoundary)
			}
			atBoundary[row.TraceID] = true
			if !f.Keep(row) {
				continue
			}
			if !fn(row) {
				return nil
			}
			if given++; limit > 0 && given >= limit {
				return nil
			}
		}
		if len(rows) < sub.Limit || fresh == 0 {
			return nil // the reader had no more
		}
	}
}
