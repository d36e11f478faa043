// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"time"
)

// PatternRun is one run as a run index holds it for failure patterns (internal/patterns): the
// run's pattern and variant ids (its signature's, computed when the run was indexed) and what a
// pattern listing reports about it, read without rebuilding the run.
type PatternRun struct {
	TraceID   string    `json:"trace_id"`
	SessionID string    `json:"session_id"` // the trace id when the run names no session
	Start     time.Time `json:"start"`
	Models    []string  `json:"models"`
	Agent     string    `json:"agent"` // gen_ai.agent.name of the run, else its service.name ('' for a passing run)
	CostUSD   float64   `json:"cost_usd"`
	// PatternID and VariantID are "" for a passing run (patterns.Signature.ID, VariantID).
	PatternID string `json:"pattern_id,omitempty"`
	VariantID string `json:"variant_id,omitempty"`
	// Signature is the variant's signature JSON when the reader computed it now (a run indexed
	// before signatures were, or whose signature is not written yet); nil when stored
	// (PatternReader.PatternSignatures has it).
	Signature []byte `json:"-"`
	Tier      string `json:"tier"`
}

// PatternFilter narrows PatternReader.PatternRuns. The zero value streams every run.
type PatternFilter struct {
	Since, Until time.Time // runs that started in [Since, Until); zero for no bound
	// PatternID keeps the runs of one pattern (failing runs only); '' streams every run, failing
	// or not (a listing's shares need the passing runs' count).
	PatternID string
	// TraceIDs, when not nil, keeps only these runs (32 lower-case hex characters each): a
	// reader looks them up by key in its index instead of walking the range, so asking which of
	// a page of runs are in a pattern costs the page, not the store. Readers apply it in their
	// query; Keep does not check it.
	TraceIDs []string
}

// Keep reports whether r's start is in f's range and r in f's pattern.
func (f PatternFilter) Keep(r PatternRun) bool {
	if !f.Since.IsZero() && r.Start.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.Start.Before(f.Until) {
		return false
	}
	return f.PatternID == "" || r.PatternID == f.PatternID
}

// PatternReader is a reader whose run index holds failure signatures: the hot and warm SQLite
// files, the ClickHouse warm tier, and Tiered over them.
type PatternReader interface {
	// PatternRuns calls yield for each run of f from the run index, newest first, each run once;
	// it stops at yield's first error and returns it. Rows are streamed, not collected.
	PatternRuns(ctx context.Context, f PatternFilter, yield func(PatternRun) error) error
	// PatternSignatures returns the stored signature JSON of each of variantIDs it holds.
	PatternSignatures(ctx context.Context, variantIDs []string) (map[string][]byte, error)
}

// PatternRuns implements PatternReader over the tiers that have one (hot, warm), in order: a
// run is streamed once, from the first tier that holds it. The trace ids of the runs streamed
// are kept to skip them in later tiers (16 bytes each).
func (t *Tiered) PatternRuns(ctx context.Context, f PatternFilter, yield func(PatternRun) error) error {
	var readers []PatternReader
	for _, r := range t.Readers {
		if pr, ok := r.(PatternReader); ok {
			readers = append(readers, pr)
		}
	}
	if len(readers) == 0 {
		return errors.New("patterns: no tier with a run index (hot or warm) is configured")
	}
	seen := map[[16]byte]struct{}{}
	for i, r := range readers {
		last := i == len(readers)-1
		err := r.PatternRuns(ctx, f, func(pr PatternRun) error {
			id, err := decodeTraceID(pr.TraceID)
			if err != nil {
				return yield(pr)
			}
			if _, dup := seen[id]; dup {
				return nil
			}
			if !last {
				seen[id] = struct{}{}
			}
			return yield(pr)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// PatternSignatures implements PatternReader: each id from the first tier that stores it.
func (t *Tiered) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, r := range t.Readers {
		pr, ok := r.(PatternReader)
		if !ok {
			continue
		}
		var want []string
		for _, id := range ids {
			if _, ok := out[id]; !ok {
				want = append(want, id)
			}
		}
		if len(want) == 0 {
			break
		}
		got, err := pr.PatternSignatures(ctx, want)
		if err != nil {
			return nil, err
		}
		for k, v := range got {
			out[k] = v
		}
	}
	return out, nil
}

var _ PatternReader = (*Tiered)(nil)
