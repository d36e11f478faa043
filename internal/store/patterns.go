package store

import (
	"context"
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
