// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// The run orders a listing can ask a run index for (RunOrder.Key).
const (
	OrderStart    = "start"    // RunSummary.Start
	OrderDuration = "duration" // RunSummary.Duration()
	OrderCost     = "cost"     // RunSummary.CostUSD (USD, priced once when each tier wrote the run)
	OrderTokens   = "tokens"   // RunSummary.InputTokens + OutputTokens
	OrderErrors   = "errors"   // RunSummary.Errors (error spans)
)

// RunOrders lists the RunOrder keys, in the order a listing names them.
var RunOrders = []string{OrderStart, OrderDuration, OrderCost, OrderTokens, OrderErrors}

// RunOrder orders run summaries by one of the keys above, descending unless Asc; ties are newest
// first, then by trace id (the order of Reader.Runs). The zero value is newest first.
type RunOrder struct {
	Key string
	Asc bool
}

// Valid reports whether o.Key is "" or one of RunOrders.
func (o RunOrder) Valid() bool {
	if o.Key == "" {
		return true
	}
	for _, k := range RunOrders {
		if k == o.Key {
			return true
		}
	}
	return false
}

// key is a's value of o.Key, as a number (0 for "" and for start, which Less compares as times).
func (o RunOrder) key(a RunSummary) float64 {
	switch o.Key {
	case OrderDuration:
		return float64(a.Duration())
	case OrderCost:
		return a.CostUSD
	case OrderTokens:
		return float64(a.InputTokens + a.OutputTokens)
	case OrderErrors:
		return float64(a.Errors)
	}
	return 0
}

// Less reports whether a comes before b in o.
func (o RunOrder) Less(a, b RunSummary) bool {
	if o.Key == OrderStart {
		// Compared as times: float64 nanoseconds lose the last digits of a unix time.
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start) == o.Asc
		}
	} else if ka, kb := o.key(a), o.key(b); ka != kb {
		return (ka < kb) == o.Asc
	}
	if !a.Start.Equal(b.Start) {
		return a.Start.After(b.Start)
	}
	return a.TraceID < b.TraceID
}

// Sort orders rows by o.
func (o RunOrder) Sort(rows []RunSummary) {
	sort.SliceStable(rows, func(i, j int) bool { return o.Less(rows[i], rows[j]) })
}

// RankedRunLister is a reader that lists the first f.Limit runs matching f in an order other
// than newest first from its run index, without giving every run of the range to the caller:
// the SQLite hot and warm files (one ORDER BY ... LIMIT over the index rows of f's range). It
// fails with errors.ErrUnsupported for an order or a file it cannot rank (the caller then reads
// every run through EachRun and sorts them itself). f.Limit must be positive.
type RankedRunLister interface {
	RankedRuns(ctx context.Context, f RunFilter, o RunOrder) ([]RunSummary, error)
}

// RankedRuns is the first f.Limit runs of r matching f in order o, from r's run index
// (RankedRunLister); errors.ErrUnsupported when r cannot rank them that way.
func RankedRuns(ctx context.Context, r Reader, f RunFilter, o RunOrder) ([]RunSummary, error) {
	if f.Limit <= 0 {
		return nil, fmt.Errorf("ranked runs: limit %d: want a positive limit", f.Limit)
	}
	if !o.Valid() {
		return nil, fmt.Errorf("ranked runs: order %q: want one of %v", o.Key, RunOrders)
	}
	rl, ok := r.(RankedRunLister)
	if !ok {
		return nil, fmt.Errorf("ranked runs: %T: %w", r, errors.ErrUnsupported)
	}
	return rl.RankedRuns(ctx, f, o)
}

// RankedRuns implements RankedRunLister over the tiers, listing each run once:
//   - every per-run tier gives its own first f.Limit (a run has the same summary in every tier
//     that holds it, so the first f.Limit of the union are among them); the first tier that
//     lists a run gives its row;
//   - a reader of whole sessions (the cold tier, which is written beside the others and keeps
//     sessions after their retention) adds the sessions that started before the oldest run the
//     per-run tiers before it hold: the first run of such a session is held by none of them.
//     A later session's runs are still theirs to list (Tiered.Runs' premise: the cold tier lists
//     what retention removed from the others), so its row is not added; finding which of its
//     runs an earlier tier lost otherwise (a failed write) would mean asking for every run of
//     the overlap, which Tiered.Runs does only page by page.
//
// It fails with errors.ErrUnsupported when a per-run tier cannot rank or does not apply the
// filter's index-only fields (RunIndexFilterer).
func (t *Tiered) RankedRuns(ctx context.Context, f RunFilter, o RunOrder) ([]RunSummary, error) {
	if f.Limit <= 0 {
		return nil, fmt.Errorf("ranked runs: limit %d: want a positive limit", f.Limit)
	}
	var cand []RunSummary
	for i, r := range t.Readers {
		if listsSessions(r) {
			var perRun []Reader
			for _, e := range t.Readers[:i] {
				if !listsSessions(e) {
					perRun = append(perRun, e)
				}
			}
			if may, err := sessionsBefore(ctx, r, perRun); err != nil {
				return nil, err
			} else if !may {
				continue // every session it holds started after the oldest run of the others
			}
			oldest, err := oldestStart(ctx, perRun)
			if err != nil {
				return nil, err
			}
			rows, err := r.Runs(ctx, RunFilter{Since: f.Since, Until: f.Until, SessionID: f.SessionID})
			if err != nil {
				return nil, err
			}
			for _, row := range rows {
				if (oldest.IsZero() || row.Start.Before(oldest)) && f.Keep(row) {
					cand = append(cand, row)
				}
			}
			continue
		}
		rl, ok := r.(RankedRunLister)
		if !ok {
			return nil, fmt.Errorf("ranked runs: %T: %w", r, errors.ErrUnsupported)
		}
		if f.indexOnly() && !filtersIndex(r) {
			return nil, fmt.Errorf("ranked runs: %T does not filter its run index: %w", r, errors.ErrUnsupported)
		}
		rows, err := rl.RankedRuns(ctx, f, o)
		if err != nil {
			return nil, err
		}
		cand = append(cand, rows...)
	}
	o.Sort(cand)
	seen := map[string]bool{}
	var out []RunSummary
	for _, row := range cand {
		if len(out) >= f.Limit {
			break
		}
		if seen[row.TraceID] {
			continue
		}
		seen[row.TraceID] = true
		out = append(out, row)
	}
	return out, nil
}
