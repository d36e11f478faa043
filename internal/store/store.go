// SPDX-License-Identifier: Apache-2.0

// Package store defines what the runagain CLI reads back from any storage tier, independent of
// the backend (SQLite for the embedded default, ClickHouse in production).
//
// A Reader lists runs and returns one run whole. Backends live in sub-packages
// (sqlitestore); every backend returns the same shapes so the CLI never knows which it reads.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ErrNotFound is returned by Reader.Run when no tier holds the trace.
var ErrNotFound = errors.New("run not found")

// RunSummary is one row of `runagain sessions`: one run (trace) with its aggregates.
type RunSummary struct {
	SessionID    string    `json:"session_id"` // docs/architecture.md "Run and session": the trace id when the run names none
	TraceID      string    `json:"trace_id"`   // 32 lowercase hex characters
	Start        time.Time `json:"start"`      // earliest span start
	End          time.Time `json:"end"`        // latest span end
	Spans        int64     `json:"spans"`
	Models       []string  `json:"models"` // distinct gen_ai response/request models, sorted
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	Errors       int64     `json:"errors"` // spans with status code ERROR
	Tier         string    `json:"tier"`   // "hot", "warm" or "cold": where the summary came from
	// Cold-tier rows summarise a whole session: TraceID is its most recent run (the
	// greatest trace id when runs cannot be told apart), TraceIDs all its runs, and Start/End
	// its first and last seen times. Other tiers leave TraceIDs empty.
	TraceIDs []string `json:"trace_ids,omitempty"`
	// CostUSD is the run's cost in USD: the sum over its LLM calls of pricing.Prices.SpanCost
	// (the embedded table with the configured overrides), priced once when each tier wrote them.
	// The hot tier on the contrib ClickHouse tables does not price; Tiered fills its rows from warm.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced counts the LLM calls with usage but no known price: their cost is unknown, not 0.
	Unpriced int64 `json:"unpriced"`
	Alerts   int64 `json:"alerts,omitempty"` // agent_guard alert records (the run index's count; cold: the session's)
	// Divergences counts the run's replay divergence records (runagainattr.EventDivergence), as
	// the hot SQLite file's run index counts them; 0 where a tier keeps none (warm, cold) or
	// cannot count them (ClickHouse).
	Divergences int64 `json:"divergences,omitempty"`
	// Incomplete is set when the stored record of the run is partial (hot and warm tiers): no
	// root span arrived, or spans name a parent that is not stored (an SDK that flushed in the
	// middle of a run, a process that died). IncompleteReason says what is missing ("no root
	// span", "2 orphan spans (parent not received)"); both clear when the missing spans arrive.
	Incomplete       bool   `json:"incomplete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	Orphans          int64  `json:"orphans,omitempty"` // spans whose parent is not stored
}

// Completeness tells whether a run's record is partial from its count of root spans (no parent)
// and of orphan spans (a parent that is not stored), and why: "no root span", "N orphan spans
// (parent not received)", or both joined by "; ".
func Completeness(roots, orphans int64) (incomplete bool, reason string) {
	var why []string
	if roots == 0 {
		why = append(why, "no root span")
	}
	if orphans == 1 {
		why = append(why, "1 orphan span (parent not received)")
	} else if orphans > 1 {
		why = append(why, fmt.Sprintf("%d orphan spans (parent not received)", orphans))
	}
	return len(why) > 0, strings.Join(why, "; ")
}

// Duration is End minus Start, or 0 when End is before Start (spans never ended, clock skew;
// see SpanDuration).
func (r RunSummary) Duration() time.Duration {
	if r.End.Before(r.Start) {
		return 0
	}
	return r.End.Sub(r.Start)
}

// RunFilter narrows Reader.Runs. The zero value lists everything. Readers with a run index (the
// SQLite hot and warm files, the ClickHouse runs table) read as many index rows as they return.
type RunFilter struct {
	Since time.Time // runs that started at or after Since; zero for all
	Until time.Time // runs that started before Until; zero for all
	// SessionID keeps the runs of one session (RunSummary.SessionID: the session key, or the
	// trace id of a run that names none); '' for all. A cold-tier row is kept when its session is.
	SessionID string
	Limit     int // at most Limit runs, newest first; 0 for no limit

	// MinCostUSD keeps the runs whose run-index cost (RunSummary.CostUSD) is above it, in USD
	// (0: every run); ErrorsOnly the runs with at least one error span (RunSummary.Errors > 0).
	// Only a reader that says so (RunIndexFilterer) applies them in its index; EachRun and Tiered
	// clear them for any other reader and apply them to its rows (Keep).
	MinCostUSD float64
	ErrorsOnly bool
	// Flagged keeps the runs with an alert or a replay divergence record (RunSummary.Alerts or
	// Divergences above 0: the sessions page's "alerts" filter), like MinCostUSD an index-only
	// field. A reader without a divergence count gives 0 Divergences: only a store whose every
	// per-run tier filters the run index (RunIndexFilterer) lists the diverged runs.
	Flagged bool
}

// Keep reports whether a row that a reader returned matches f (Limit aside): what every reader
// applies to time range and session, and what EachRun and Tiered check again.
func (f RunFilter) Keep(r RunSummary) bool {
	if !f.Since.IsZero() && r.Start.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.Start.Before(f.Until) {
		return false
	}
	if f.MinCostUSD > 0 && !(r.CostUSD > f.MinCostUSD) {
		return false
	}
	if f.ErrorsOnly && r.Errors == 0 {
		return false
	}
	if f.Flagged && r.Alerts == 0 && r.Divergences == 0 {
		return false
	}
	return f.SessionID == "" || r.SessionID == f.SessionID
}

// RunIndexFilterer is a reader whose Runs applies RunFilter.MinCostUSD, ErrorsOnly and Flagged
// in its run index (the SQLite hot and warm files), so that a filtered listing's pages hold only
// matching rows and its Limit counts them. A reader without it is given a filter without them.
type RunIndexFilterer interface {
	FiltersRunIndex() bool
}

// FiltersRunIndex reports whether r applies RunFilter's index-only fields (MinCostUSD,
// ErrorsOnly, Flagged) in its run index (RunIndexFilterer), so that a listing with them reads
// only matching rows.
func FiltersRunIndex(r Reader) bool { return filtersIndex(r) }

// filtersIndex reports whether r applies the index-only filter fields itself.
func filtersIndex(r Reader) bool {
	fi, ok := r.(RunIndexFilterer)
	return ok && fi.FiltersRunIndex()
}

// indexOnly reports whether f sets a field only a RunIndexFilterer applies in its index.
func (f RunFilter) indexOnly() bool { return f.MinCostUSD > 0 || f.ErrorsOnly || f.Flagged }

// forReader is f as r is asked for it: without the fields r does not apply (filtersIndex); the
// caller applies f.Keep to r's rows.
func (f RunFilter) forReader(r Reader) RunFilter {
	if !filtersIndex(r) {
		f.MinCostUSD, f.ErrorsOnly, f.Flagged = 0, false, false
	}
	return f
}

// SortRuns orders rows as Reader.Runs returns them: newest start first, then trace id (the
// zero RunOrder).
func SortRuns(rows []RunSummary) { RunOrder{}.Sort(rows) }

// Run is one run as stored: its spans (with resource and scope) and the log records that point
// at it (for example agent_guard alerts), in storage order; callers order spans with Order.
//
// A run from the warm tier holds its spans rebuilt from summaries (names, timing, status,
// summary attributes, exception events; no payloads) and its alert records. A run only the cold
// tier knows has no spans: Session holds its session's merged record, and Logs one record
// (event name SessionSummaryEventName) saying so in words, for readers that print logs.
type Run struct {
	TraceID string
	Traces  ptrace.Traces
	Logs    plog.Logs
	Tier    string
	Session *Session // set by the cold tier only
}

// Reader reads runs back from a store.
type Reader interface {
	// Runs lists run summaries, newest first.
	Runs(ctx context.Context, f RunFilter) ([]RunSummary, error)
	// Run returns one run by its 32-hex-character trace id, or ErrNotFound.
	Run(ctx context.Context, traceID string) (*Run, error)
	Close() error
}
