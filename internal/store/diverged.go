// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
)

// DivergedRunLister is a reader that lists, from an index and without reading any run, the trace
// ids of the runs holding a replay divergence record (log records of event
// runagainattr.EventDivergence: replay, rerun and test write one on the attempt's run). The
// sessions page's "alerts or divergences" filter reads it beside the run index's alert counts
// instead of reading every run of the range (issue 35). The hot SQLite file answers from its
// logs_event index; the warm SQLite file and the cold tier keep no divergence record (warm keeps
// only alerts, as key events) and answer with none; Tiered answers when every tier does.
type DivergedRunLister interface {
	DivergedRuns(ctx context.Context) ([]string, error)
}

// DivergedRuns implements DivergedRunLister over every tier: their answers in tier order (a run
// two tiers name is listed twice; DivergedSet makes the set). It fails with
// errors.ErrUnsupported when a tier cannot answer (ClickHouse): the caller then reads the runs
// themselves.
func (t *Tiered) DivergedRuns(ctx context.Context) ([]string, error) {
	var out []string
	for _, r := range t.Readers {
		dl, ok := r.(DivergedRunLister)
		if !ok {
			return nil, fmt.Errorf("diverged runs: %T: %w", r, errors.ErrUnsupported)
		}
		ids, err := dl.DivergedRuns(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	return out, nil
}

// DivergedSet is the set of r's runs with a divergence record (DivergedRunLister), nil when r
// cannot list them from an index (the caller then reads the runs themselves).
func DivergedSet(ctx context.Context, r Reader) (map[string]bool, error) {
	dl, ok := r.(DivergedRunLister)
	if !ok {
		return nil, nil
	}
	ids, err := dl.DivergedRuns(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}
