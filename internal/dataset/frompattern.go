// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// DefaultPatternLimit is how many runs AddFromPattern freezes when no limit is given.
const DefaultPatternLimit = 5

// PatternAdd is what AddFromPattern freezes: up to Limit runs of pattern PatternID (started
// since Since, when set) into a new version of dataset Name.
type PatternAdd struct {
	Name      string
	PatternID string
	Limit     int // 0: DefaultPatternLimit
	Since     time.Time
	Note      string
	// View reads each run (prices, session keys); its Resolver, when set, rehydrates the run's
	// offloaded payloads before it is frozen (a case must hold its bytes).
	View runview.Options
}

// PatternCase is one case AddFromPattern froze, with the facts of its recorded run.
type PatternCase struct {
	Case  *Case
	Facts *Facts
}

// AddFromPattern freezes runs of one failure pattern as cases of a new version of a.Name (the
// newest version's cases plus these; a case with the same id, the trace id, is replaced), each
// expecting no_pattern=ID: `runagain test` passes a case only when the new run's signature falls
// outside the pattern. The runs are chosen to cover the pattern's variants (patterns.Examples:
// the newest run of each variant, most frequent first, then the newest others). A run no longer
// in the hot tier (its spans and payloads are gone) is skipped; it is an error when none is left.
// The one function `runagain dataset add --pattern` and the UI call.
func AddFromPattern(ctx context.Context, st *Store, rd store.Reader, pr store.PatternReader, a PatternAdd) (*Manifest, bool, []PatternCase, error) {
	if err := CheckName(a.Name); err != nil {
		return nil, false, nil, err
	}
	if e := (Expectation{NoPattern: a.PatternID}); e.Validate() != nil {
		return nil, false, nil, fmt.Errorf("--pattern: %w", e.Validate())
	}
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultPatternLimit
	}
	_, runs, err := patterns.Show(ctx, pr, a.PatternID, store.PatternFilter{Since: a.Since})
	if err != nil {
		return nil, false, nil, err
	}
	var hot []patterns.Run
	for _, r := range runs {
		if r.Tier == store.TierHot {
			hot = append(hot, r)
		}
	}
	if len(hot) == 0 {
		return nil, false, nil, fmt.Errorf("pattern %s: none of its %d runs is in the hot tier any more (their spans and payloads are gone): nothing to freeze", a.PatternID, len(runs))
	}
	var out []PatternCase
	var cases []*Case
	for _, r := range patterns.Examples(hot, limit) {
		run, err := rd.Run(ctx, r.TraceID)
		if err != nil {
			return nil, false, nil, fmt.Errorf("run %s: %w", r.TraceID, err)
		}
		if err := rehydrate(ctx, a.View.Resolver, run.Traces, run.Logs); err != nil {
			return nil, false, nil, fmt.Errorf("run %s: rehydrating payloads: %w", r.TraceID, err)
		}
		opts := a.View
		opts.Resolver = nil // rehydrated above
		v, err := runview.Build(ctx, run, opts)
		if err != nil {
			return nil, false, nil, fmt.Errorf("run %s: %w", r.TraceID, err)
		}
		facts, err := RunFacts(v)
		if err != nil {
			return nil, false, nil, fmt.Errorf("run %s: %w", r.TraceID, err)
		}
		c, err := Freeze("", r.TraceID, run.Traces, run.Logs, &CaseExpect{Expect: []Expectation{{NoPattern: a.PatternID}}})
		if err != nil {
			return nil, false, nil, err
		}
		cases = append(cases, c)
		out = append(out, PatternCase{Case: c, Facts: facts})
	}
	m, created, err := st.Add(ctx, a.Name, a.Note, cases)
	return m, created, out, err
}

func rehydrate(ctx context.Context, r runview.Resolver, td ptrace.Traces, ld plog.Logs) error {
	if r == nil {
		return nil
	}
	var errs []error
	store.EachSpan(td, func(s ptrace.Span) {
		if err := r.RehydrateSpan(ctx, s); err != nil {
			errs = append(errs, err)
		}
	})
	store.EachLogRecord(ld, func(lr plog.LogRecord) {
		if err := r.RehydrateLogRecord(ctx, lr); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}
