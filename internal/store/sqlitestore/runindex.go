package sqlitestore

// The run index: one row per run (trace) in the hot and the warm file, so that listing the newest
// runs, the runs of a session or of a time range reads as many index rows as it returns instead of
// aggregating every span of the store (issue 17, "Reads that do not grow with the store").
//
//	runs: one row per trace that has at least one span row, primary key trace_id
//	  trace_id              TEXT     32 lowercase hex characters
//	  session_id            TEXT     the greatest non-empty session_id of its spans; '' for none
//	                                 (the listing shows the trace id: the run is its own session)
//	  start_time_unix_nano  INTEGER  MIN(start_time_unix_nano) of its spans
//	  end_time_unix_nano    INTEGER  MAX of each span's end, or its start when it ended before
//	  spans                 INTEGER  span rows
//	  models                TEXT     distinct non-empty models, comma-separated (unordered)
//	  service_name          TEXT     the greatest service.name of its spans
//	  agent_name            TEXT     the greatest gen_ai.agent.name (warm; '' in the hot file)
//	  input_tokens, output_tokens  INTEGER  sums
//	  errors                INTEGER  spans with status code 2 (error)
//	  cost_usd              REAL     SUM(cost_usd): each call priced once when written
//	  unpriced              INTEGER  SUM(unpriced)
//	  roots                 INTEGER  spans without a parent
//	  orphans               INTEGER  spans whose parent span is not stored
//	  alerts                INTEGER  agent_guard alert records of the run (hot: logs with event
//	                                 runagain.alert; warm: key events of kind alert)
//	  ingested_unix_nano    INTEGER  the latest ingestion of its span rows
//
//	indexes: runs_start (start_time_unix_nano DESC, trace_id): newest first and time ranges;
//	         runs_session (session_id, start_time_unix_nano DESC, trace_id): the runs of a session.
//
// Every value is the aggregate the listing computed over the span rows before the index existed
// (listRuns): a row is recomputed from the run's span rows (through the (trace_id, span_id)
// unique index) in the same transaction that writes or deletes them, so a retried batch, a late
// parent that clears an orphan, an expiry or an erasure leave it exact. Its cost on the write path
// is one aggregate over the spans of each run a batch touches.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// RunsTable is the run index table's name in the hot and the warm file.
const RunsTable = "runs"

const runsDDL = `
CREATE TABLE IF NOT EXISTS runs (
  trace_id             TEXT    NOT NULL PRIMARY KEY,
  session_id           TEXT    NOT NULL,
  start_time_unix_nano INTEGER NOT NULL,
  end_time_unix_nano   INTEGER NOT NULL,
  spans                INTEGER NOT NULL,
  models               TEXT    NOT NULL,
  service_name         TEXT    NOT NULL,
  agent_name           TEXT    NOT NULL,
  input_tokens         INTEGER NOT NULL,
  output_tokens        INTEGER NOT NULL,
  errors               INTEGER NOT NULL,
  cost_usd             REAL    NOT NULL,
  unpriced             INTEGER NOT NULL,
  roots                INTEGER NOT NULL,
  orphans              INTEGER NOT NULL,
  alerts               INTEGER NOT NULL,
  ingested_unix_nano   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_start ON runs (start_time_unix_nano DESC, trace_id);
CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id, start_time_unix_nano DESC, trace_id);
`

// runIndex is how one tier's file aggregates its span rows into the runs table.
type runIndex struct {
	spans  string // span table: spans (hot) or span_summaries (warm)
	agent  string // aggregate of the agent name ("''" where the table has none)
	alerts string // correlated count of the run's alert records (s.trace_id is the run)
	// triggers keep the index right when rows are deleted by any code path (an erasure, a
	// maintenance DELETE): a deleted span row drops its run's index row (expiry, which may delete
	// part of a run, recomputes the rows of the runs it touched afterwards), a deleted alert
	// record decrements the count. INSERT OR REPLACE does not fire them (recursive_triggers is off).
	triggers string
}

var (
	hotIndex = runIndex{spans: "spans", agent: "''",
		alerts: `(SELECT COUNT(*) FROM logs l WHERE l.trace_id = s.trace_id AND l.event_name = '` + store.AlertEventName + `')`,
		triggers: `
CREATE TRIGGER IF NOT EXISTS spans_runs_delete AFTER DELETE ON spans BEGIN
  DELETE FROM runs WHERE trace_id = old.trace_id;
END;
CREATE TRIGGER IF NOT EXISTS logs_runs_delete AFTER DELETE ON logs WHEN old.event_name = '` + store.AlertEventName + `' BEGIN
  UPDATE runs SET alerts = alerts - 1 WHERE trace_id = old.trace_id;
END;
`}
	warmIndex = runIndex{spans: "span_summaries", agent: "MAX(agent_name)",
		alerts: `(SELECT COUNT(*) FROM key_events e WHERE e.trace_id = s.trace_id AND e.kind = 'alert')`,
		triggers: `
CREATE TRIGGER IF NOT EXISTS span_summaries_runs_delete AFTER DELETE ON span_summaries BEGIN
  DELETE FROM runs WHERE trace_id = old.trace_id;
END;
CREATE TRIGGER IF NOT EXISTS key_events_runs_delete AFTER DELETE ON key_events WHEN old.kind = 'alert' BEGIN
  UPDATE runs SET alerts = alerts - 1 WHERE trace_id = old.trace_id;
END;
`}
)

// ddl creates the runs table, its indexes and x's triggers.
func (x runIndex) ddl() string { return runsDDL + x.triggers }

// fill returns the statement that (re)computes the index rows of the traces where selects.
func (x runIndex) fill(where string) string {
	return `INSERT OR REPLACE INTO runs (trace_id, session_id, start_time_unix_nano, end_time_unix_nano, spans, models,
	    service_name, agent_name, input_tokens, output_tokens, errors, cost_usd, unpriced, roots, orphans, alerts, ingested_unix_nano)
	  SELECT trace_id, COALESCE(MAX(NULLIF(session_id, '')), ''), MIN(start_time_unix_nano),
	    MAX(MAX(end_time_unix_nano, start_time_unix_nano)), COUNT(*), COALESCE(GROUP_CONCAT(DISTINCT NULLIF(model, '')), ''),
	    MAX(service_name), ` + x.agent + `, SUM(input_tokens), SUM(output_tokens), SUM(status_code = 2),
	    SUM(cost_usd), SUM(unpriced), SUM(parent_span_id = ''),
	    SUM(parent_span_id != '' AND NOT EXISTS (SELECT 1 FROM ` + x.spans + ` p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)),
	    ` + x.alerts + `, MAX(ingested_unix_nano)
	  FROM ` + x.spans + ` AS s WHERE ` + where + ` GROUP BY trace_id`
}

// buildSQL fills the index from every span row: the migration of a file written before the index
// existed (idempotent, so an interrupted migration is simply run again).
func (x runIndex) buildSQL() string { return x.ddl() + x.fill("1") + ";" }

// Execer is what the index maintenance needs of a handle: a *sql.Tx (the writer's transaction,
// an erasure's) or a *sql.DB.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// refresh recomputes the index rows of traceIDs from their span rows in x's transaction: a run
// with no span row left loses its index row.
func (x runIndex) refresh(ctx context.Context, e Execer, traceIDs []string) error {
	return x.recompute(ctx, e, traceIDs, true)
}

// recompute is refresh; without mayVanish (the writer, which just stored a span row of each run)
// it skips deleting the rows of runs without span rows.
func (x runIndex) recompute(ctx context.Context, e Execer, traceIDs []string, mayVanish bool) error {
	if len(traceIDs) == 0 {
		return nil
	}
	ids, err := json.Marshal(traceIDs)
	if err != nil {
		return err
	}
	if mayVanish {
		if _, err := e.ExecContext(ctx, `DELETE FROM runs WHERE trace_id IN (SELECT value FROM json_each(?))`, string(ids)); err != nil {
			return fmt.Errorf("run index: %w", err)
		}
	}
	if _, err := e.ExecContext(ctx, x.fill(`trace_id IN (SELECT value FROM json_each(?))`), string(ids)); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	return nil
}

// RefreshRuns recomputes the hot file's run index rows of traceIDs (32 lowercase hex) from their
// span and log rows, through e: call it in the transaction that deleted or changed those rows
// (an erasure), so the index never lists a run that is gone. A run with no span row left loses
// its index row. It is a no-op on a file opened read-only from an older schema version.
func (d *DB) RefreshRuns(ctx context.Context, e Execer, traceIDs []string) error {
	if d.version < SchemaVersion {
		return nil
	}
	return hotIndex.refresh(ctx, e, traceIDs)
}

// RefreshRuns is DB.RefreshRuns for the warm file (span_summaries and key_events).
func (w *WarmDB) RefreshRuns(ctx context.Context, e Execer, traceIDs []string) error {
	if w.version < WarmSchemaVersion {
		return nil
	}
	return warmIndex.refresh(ctx, e, traceIDs)
}

// traceSet collects the distinct trace ids a batch touches, in first-seen order.
type traceSet struct {
	seen map[string]bool
	ids  []string
}

func (t *traceSet) add(id string) {
	if id == "" || t.seen[id] {
		return
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[id] = true
	t.ids = append(t.ids, id)
}

// queryer is *sql.DB or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// RunsQuery is the SQL the indexed listing issues for f, with its arguments: newest first
// (start descending, then trace id), on runs_start, or runs_session with f.SessionID.
func RunsQuery(f store.RunFilter) (string, []any) {
	q := `SELECT trace_id, session_id, start_time_unix_nano, end_time_unix_nano, spans, models, input_tokens,
	  output_tokens, errors, cost_usd, unpriced, roots, orphans FROM runs`
	var where []string
	var args []any
	if f.SessionID != "" {
		// A run without a session key is its own session: its trace id names it.
		where = append(where, `session_id = ?`)
		args = append(args, f.SessionID)
	}
	if !f.Since.IsZero() {
		where = append(where, `start_time_unix_nano >= ?`)
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where = append(where, `start_time_unix_nano < ?`)
		args = append(args, f.Until.UnixNano())
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY start_time_unix_nano DESC, trace_id`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return q, args
}

// indexedRuns lists f from the runs table of db.
func indexedRuns(ctx context.Context, db queryer, f store.RunFilter, tier string) ([]store.RunSummary, error) {
	q, args := RunsQuery(f)
	out, err := scanRuns(ctx, db, q, args, tier)
	if err != nil {
		return nil, err
	}
	if f.SessionID == "" || !looksLikeTraceID(f.SessionID) {
		return out, nil
	}
	// The run of that id, when it names no session, is listed under its trace id.
	own, err := scanRuns(ctx, db, `SELECT trace_id, session_id, start_time_unix_nano, end_time_unix_nano, spans, models,
	  input_tokens, output_tokens, errors, cost_usd, unpriced, roots, orphans FROM runs WHERE trace_id = ? AND session_id = ''`,
		[]any{strings.ToLower(f.SessionID)}, tier)
	if err != nil || len(own) == 0 {
		return out, err
	}
	if (!f.Since.IsZero() && own[0].Start.Before(f.Since)) || (!f.Until.IsZero() && !own[0].Start.Before(f.Until)) {
		return out, nil
	}
	out = append(out, own...)
	store.SortRuns(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func looksLikeTraceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// scanRuns reads run rows in the column order of the run index and of AggregateRunsQuery:
// trace id, session id, start and end (unix ns), spans, models, input and output tokens, errors,
// cost (USD), unpriced calls, roots, orphans.
func scanRuns(ctx context.Context, db queryer, q string, args []any, tier string) ([]store.RunSummary, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s tier: list runs: %w", tier, err)
	}
	defer rows.Close()
	var out []store.RunSummary
	for rows.Next() {
		var r store.RunSummary
		var start, end, roots int64
		var models string
		if err := rows.Scan(&r.TraceID, &r.SessionID, &start, &end, &r.Spans, &models, &r.InputTokens,
			&r.OutputTokens, &r.Errors, &r.CostUSD, &r.Unpriced, &roots, &r.Orphans); err != nil {
			return nil, err
		}
		r.Incomplete, r.IncompleteReason = store.Completeness(roots, r.Orphans)
		if r.SessionID == "" {
			r.SessionID = r.TraceID
		}
		r.Start, r.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		r.Models = splitModels(models)
		r.Tier = tier
		out = append(out, r)
	}
	return out, rows.Err()
}

// splitModels turns a comma-joined model list into a sorted list ([] for none).
func splitModels(s string) []string {
	if s == "" {
		return []string{}
	}
	ms := strings.Split(s, ",")
	sort.Strings(ms)
	return ms
}
