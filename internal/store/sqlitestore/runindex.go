// SPDX-License-Identifier: Apache-2.0

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
//	         runs_session (session_id, start_time_unix_nano DESC, trace_id): the runs of a session;
//	         runs_cost, runs_duration, runs_tokens, runs_errors (KEY DESC, start_time_unix_nano
//	         DESC, trace_id) for each store.RunOrder key but start (runOrderSQL's expression):
//	         the ranked listings (rankIndex). Part of the DDL, so a file of any version gains
//	         them when opened for writing; read-only without them a ranked listing sorts.
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
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/runagainattr"
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
  ingested_unix_nano   INTEGER NOT NULL,
  divergences          INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_start ON runs (start_time_unix_nano DESC, trace_id);
CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id, start_time_unix_nano DESC, trace_id);
` + rankIndexesDDL

// runIndex is how one tier's file aggregates its span rows into the runs table.
type runIndex struct {
	spans  string // span table: spans (hot) or span_summaries (warm)
	agent  string // aggregate of the agent name ("''" where the table has none)
	alerts string // correlated count of the run's alert records (s.trace_id is the run)
	// divergences is the correlated count of the run's replay divergence records ("0": the tier
	// keeps none), and divergencesDDL what keeps it right when they are deleted (flagsDDL)
	divergences, divergencesDDL string
	// orphans is the orphans table ('' for none: the index is only recomputed, never applied)
	orphans string
	// sessions is the table of the runs' other sessions ('' for none: hot run_sessions)
	sessions string
	// exchanges lists the runs' derived exchanges, for the counting rule (countrule.go)
	exchanges string
	// triggers keep the index right when rows are deleted by any code path (an erasure, a
	// maintenance DELETE): a deleted span row drops its run's index row (expiry, which may delete
	// part of a run, recomputes the rows of the runs it touched afterwards), a deleted alert
	// record decrements the count. INSERT OR REPLACE does not fire them (recursive_triggers is off).
	triggers string
}

var (
	hotIndex = runIndex{spans: "spans", agent: "''", orphans: "span_orphans", sessions: "run_sessions", exchanges: "run_rule_spans",
		alerts:      `(SELECT COUNT(*) FROM logs l WHERE l.trace_id = s.trace_id AND l.event_name = '` + store.AlertEventName + `')`,
		divergences: `(SELECT COUNT(*) FROM logs l WHERE l.trace_id = s.trace_id AND l.event_name = '` + runagainattr.EventDivergence + `')`,
		divergencesDDL: `
CREATE TRIGGER IF NOT EXISTS logs_runs_divergence_delete AFTER DELETE ON logs WHEN old.event_name = '` + runagainattr.EventDivergence + `' BEGIN
  UPDATE runs SET divergences = divergences - 1 WHERE trace_id = old.trace_id;
END;
`,
		triggers: `
CREATE TRIGGER IF NOT EXISTS spans_runs_delete AFTER DELETE ON spans BEGIN
  DELETE FROM runs WHERE trace_id = old.trace_id;
END;
CREATE TRIGGER IF NOT EXISTS logs_runs_delete AFTER DELETE ON logs WHEN old.event_name = '` + store.AlertEventName + `' BEGIN
  UPDATE runs SET alerts = alerts - 1 WHERE trace_id = old.trace_id;
END;
`}
	warmIndex = runIndex{spans: "span_summaries", agent: "MAX(agent_name)", orphans: "summary_orphans", exchanges: "summary_rule_spans",
		alerts:      `(SELECT COUNT(*) FROM key_events e WHERE e.trace_id = s.trace_id AND e.kind = 'alert')`,
		divergences: "0",
		triggers: `
CREATE TRIGGER IF NOT EXISTS span_summaries_runs_delete AFTER DELETE ON span_summaries BEGIN
  DELETE FROM runs WHERE trace_id = old.trace_id;
END;
CREATE TRIGGER IF NOT EXISTS key_events_runs_delete AFTER DELETE ON key_events WHEN old.kind = 'alert' BEGIN
  UPDATE runs SET alerts = alerts - 1 WHERE trace_id = old.trace_id;
END;
`}
)

// ddl creates the runs table, its indexes and x's triggers (and its orphans and sessions tables).
func (x runIndex) ddl() string {
	if x.orphans == "" {
		return runsDDL + x.triggers
	}
	return runsDDL + x.triggers + x.orphansDDL() + x.sessionsDDL() + x.exchangesDDL() + patternsDDL
}

// # Other sessions of a run (hot schema version 8)
//
// runs.session_id is the greatest session of a run's spans; a run whose spans name more than one
// session (an orchestrator's trace holding a sub-agent's conversation) is also listed under the
// others in run_sessions, so an erasure by session finds every run with a span of the session
// through two indexes instead of an index on every span row (spans_session, dropped in version
// 8). It is empty for the usual run of one session.
//
//	run_sessions
//	  session_id  TEXT  a non-empty session_id of a span of the run, other than runs.session_id
//	  trace_id    TEXT  the run
//	  primary key (session_id, trace_id), WITHOUT ROWID; index run_sessions_trace (trace_id)
//
// The writer adds a run's other sessions as it updates its index row (applyRuns); wherever a run
// is recomputed from its span rows they are too (fillSessions), and a deleted span row deletes
// its run's (trigger; expiry recomputes the runs it left in part).

// sessionsDDL creates x's sessions table, its index and delete trigger (nothing for warm).
func (x runIndex) sessionsDDL() string {
	if x.sessions == "" {
		return ""
	}
	return `
CREATE TABLE IF NOT EXISTS ` + x.sessions + ` (
  session_id TEXT NOT NULL,
  trace_id   TEXT NOT NULL,
  PRIMARY KEY (session_id, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ` + x.sessions + `_trace ON ` + x.sessions + ` (trace_id);
CREATE TRIGGER IF NOT EXISTS ` + x.spans + `_sessions_delete AFTER DELETE ON ` + x.spans + ` BEGIN
  DELETE FROM ` + x.sessions + ` WHERE trace_id = old.trace_id;
END;
`
}

// fillSessions returns the statement that adds the other sessions of the runs where selects
// (span rows, their runs' index rows written).
func (x runIndex) fillSessions(where string) string {
	return `INSERT OR IGNORE INTO ` + x.sessions + ` (session_id, trace_id)
	  SELECT DISTINCT s.session_id, s.trace_id FROM ` + x.spans + ` AS s JOIN runs r ON r.trace_id = s.trace_id
	  WHERE (` + where + `) AND s.session_id != '' AND s.session_id != r.session_id`
}

// fill returns the statement that (re)computes the index rows of the traces where selects.
func (x runIndex) fill(where string) string {
	return `INSERT OR REPLACE INTO runs (trace_id, session_id, start_time_unix_nano, end_time_unix_nano, spans, models,
	    service_name, agent_name, input_tokens, output_tokens, errors, cost_usd, unpriced, roots, orphans, alerts, ingested_unix_nano,
	    divergences)
	  SELECT trace_id, COALESCE(MAX(NULLIF(session_id, '')), ''), MIN(start_time_unix_nano),
	    MAX(MAX(end_time_unix_nano, start_time_unix_nano)), COUNT(*), COALESCE(GROUP_CONCAT(DISTINCT NULLIF(model, '')), ''),
	    MAX(service_name), ` + x.agent + `, SUM(input_tokens), SUM(output_tokens), SUM(status_code = 2),
	    SUM(cost_usd), SUM(unpriced), SUM(parent_span_id = ''),
	    SUM(parent_span_id != '' AND NOT EXISTS (SELECT 1 FROM ` + x.spans + ` p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)),
	    ` + x.alerts + `, MAX(ingested_unix_nano), ` + x.divergences + `
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
	return x.rebuild(ctx, e, traceIDs, true)
}

// recompute is refresh; without mayVanish (the writer, which just stored a span row of each run)
// it skips deleting the rows of runs without span rows.
// ids is the runs' trace ids as a JSON array.
func (x runIndex) recompute(ctx context.Context, e Execer, ids string, mayVanish bool) error {
	if mayVanish {
		if _, err := e.ExecContext(ctx, `DELETE FROM runs WHERE trace_id IN (SELECT value FROM json_each(?))`, ids); err != nil {
			return fmt.Errorf("run index: %w", err)
		}
	}
	if _, err := e.ExecContext(ctx, x.fill(`trace_id IN (SELECT value FROM json_each(?))`), ids); err != nil {
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

// runColumns are the run index columns scanRuns reads, in its order.
const runColumns = `trace_id, session_id, start_time_unix_nano, end_time_unix_nano, spans, models, input_tokens,
	  output_tokens, errors, cost_usd, unpriced, roots, orphans, alerts, divergences`

// runColumnsNoDivergences are runColumns for a file without the divergences column (a file of
// schema version 8 or before, opened read-only): none counted.
var runColumnsNoDivergences = strings.TrimSuffix(runColumns, "divergences") + "0"

// RunsQuery is the SQL the indexed listing issues for f, with its arguments: newest first
// (start descending, then trace id), on runs_start, or runs_session with f.SessionID; the cost
// and error filters (f.MinCostUSD, f.ErrorsOnly) are applied to the index rows it walks.
func RunsQuery(f store.RunFilter) (string, []any) {
	return RankedRunsQuery(f, store.RunOrder{})
}

// runOrderSQL is the run index expression of each store.RunOrder key, ordered as
// store.RunOrder.Less orders them (duration as RunSummary.Duration: 0 when the end is before
// the start).
var runOrderSQL = map[string]string{
	store.OrderStart:    `start_time_unix_nano`,
	store.OrderDuration: `MAX(end_time_unix_nano - start_time_unix_nano, 0)`,
	store.OrderCost:     `cost_usd`,
	store.OrderTokens:   `input_tokens + output_tokens`,
	store.OrderErrors:   `errors`,
}

// rankIndex names the run index's index of each store.RunOrder key but start: (runOrderSQL[key]
// DESC, start_time_unix_nano DESC, trace_id), so that walked forward it is the descending order
// store.RunOrder.Less gives, and walked backward the ascending one up to ties of the key (which
// SQLite's sorter orders, a group of equal keys at a time). Each costs one more B-tree entry
// per run written, rewritten when a batch changes the key (BENCHMARKS.md, "Reads at 10^4, 10^5
// and 10^6 runs").
var rankIndex = map[string]string{
	store.OrderDuration: "runs_duration",
	store.OrderCost:     "runs_cost",
	store.OrderTokens:   "runs_tokens",
	store.OrderErrors:   "runs_errors",
}

// rankIndexesDDL creates the rankIndex indexes, on runOrderSQL's expressions (an expression
// index serves an ORDER BY of the same expression only). runs_errors holds only the runs with
// errors (a partial index: a batch that adds no error span to a run does not touch it); the
// runs without are read on runs_start, before (ascending) or after (descending) it (byErrors).
// runs_failed is the runs with errors in start order, for the error filter in start order (the
// sessions page's ?errors=1, `sessions --failed`): the listing reads the failing runs of its
// page and count only, where runs_start read every run in between (about ten times as many rows
// at readbench's one failing run in ten, BENCHMARKS.md "Reads at 10^4, 10^5 and 10^6 runs").
const rankIndexesDDL = `
CREATE INDEX IF NOT EXISTS runs_duration ON runs (MAX(end_time_unix_nano - start_time_unix_nano, 0) DESC, start_time_unix_nano DESC, trace_id);
CREATE INDEX IF NOT EXISTS runs_cost ON runs (cost_usd DESC, start_time_unix_nano DESC, trace_id);
CREATE INDEX IF NOT EXISTS runs_tokens ON runs (input_tokens + output_tokens DESC, start_time_unix_nano DESC, trace_id);
CREATE INDEX IF NOT EXISTS runs_errors ON runs (errors DESC, start_time_unix_nano DESC, trace_id) WHERE errors > 0;
CREATE INDEX IF NOT EXISTS runs_failed ON runs (start_time_unix_nano DESC, trace_id) WHERE errors > 0;
`

// flagsDDL creates runs_flagged, the runs with an alert or a divergence record in start order
// (the sessions page's alerts filter, store.RunFilter.Flagged), and the tier's trigger on
// deleted divergence records: once the runs table has its divergences column (ensureFlags), so
// not in runsDDL, which an older file runs before it has.
func (x runIndex) flagsDDL() string {
	return `CREATE INDEX IF NOT EXISTS runs_flagged ON runs (start_time_unix_nano DESC, trace_id) WHERE alerts > 0 OR divergences > 0;
` + x.divergencesDDL
}

// ensureFlags gives the runs table of a file written before schema version 9 (hot) or 5 (warm)
// its divergences column, counted from the stored records in one transaction, then flagsDDL.
// It is idempotent: a file whose table has the column (a new file, or one whose run index an
// older migration built from the current runsDDL) is only given what flagsDDL creates.
func (x runIndex) ensureFlags(ctx context.Context, db *sql.DB) error {
	has, err := hasDivergences(ctx, db)
	if err != nil {
		return err
	}
	if !has {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // no-op after Commit
		if _, err := tx.ExecContext(ctx, `ALTER TABLE runs ADD COLUMN divergences INTEGER NOT NULL DEFAULT 0`); err != nil {
			return fmt.Errorf("run index: add divergences: %w", err)
		}
		if x.divergences != "0" { // the hot file: the runs with a divergence record, by logs_event
			if _, err := tx.ExecContext(ctx, `UPDATE runs AS s SET divergences = `+x.divergences+`
			  WHERE s.trace_id IN (SELECT trace_id FROM logs WHERE event_name = ?)`, runagainattr.EventDivergence); err != nil {
				return fmt.Errorf("run index: count divergences: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, x.flagsDDL()); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	return nil
}

// runsQueryer is db for the run listings (indexedRuns), which read runColumns: over a file
// without the divergences column (flags false: a file of an older version opened read-only), one
// that reads 0 for it.
func runsQueryer(db queryer, flags bool) queryer {
	if flags {
		return db
	}
	return noDivergences{db}
}

// noDivergences reads the run listings of a file whose runs table has no divergences column.
type noDivergences struct{ queryer }

func (n noDivergences) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return n.queryer.QueryContext(ctx, strings.ReplaceAll(query, runColumns, runColumnsNoDivergences), args...)
}

// openFlags is, for a file just opened with its run index (indexed), whether its runs table has
// the divergences column: a file opened for writing is given it (ensureFlags).
func openFlags(ctx context.Context, db *sql.DB, x runIndex, indexed, readOnly bool) (bool, error) {
	switch {
	case !indexed:
		return false, nil
	case readOnly:
		return hasDivergences(ctx, db)
	}
	return true, x.ensureFlags(ctx, db)
}

// hasDivergences reports whether the runs table of db has its divergences column.
func hasDivergences(ctx context.Context, db queryer) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT 1 FROM pragma_table_info('runs') WHERE name = 'divergences'`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	has := rows.Next()
	return has, rows.Err()
}

// hasRankIndexes reports whether the file of db has every rankIndex index and runs_failed (a
// file written by a build before them, opened read-only, has none or some: its listings let
// SQLite pick the index).
func hasRankIndexes(ctx context.Context, db *sql.DB) bool {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'
	  AND name IN ('runs_duration', 'runs_cost', 'runs_tokens', 'runs_errors', 'runs_failed', 'runs_flagged')`).Scan(&n)
	return err == nil && n == len(rankIndex)+2
}

// rangeSortMax is the number of runs in a ranked listing's time range below which the range is
// walked on runs_start and sorted (at most rangeSortMax index rows read), instead of walking
// the key's index in order and skipping the runs outside the range (about f.Limit times the
// store's runs over the range's runs read).
// (A variable for the tests, which walk the key's index for every range with 0.)
var rangeSortMax = 5000

// RankedRunsQuery is RunsQuery ordered by o (store.RunOrder.Less: o's key, then newest first,
// then trace id) instead of newest first: SQLite walks the runs of f's range and keeps the best
// f.Limit in its sorter, so memory and rows returned are bounded by f.Limit. The listing reads
// runs through the key's index instead (rankedRunsQuery) where the file has it and the range is
// large.
func RankedRunsQuery(f store.RunFilter, o store.RunOrder) (string, []any) {
	return rankedRunsQuery(f, o, "")
}

// rankedRunsQuery is RankedRunsQuery reading the runs through the index named via ("": the
// one SQLite picks).
func rankedRunsQuery(f store.RunFilter, o store.RunOrder, via string, terms ...string) (string, []any) {
	q := `SELECT ` + runColumns + ` FROM runs`
	if via != "" {
		q += ` INDEXED BY ` + via
	}
	where := append([]string(nil), terms...)
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
	if f.MinCostUSD > 0 {
		where = append(where, `cost_usd > ?`)
		args = append(args, f.MinCostUSD)
	}
	if f.ErrorsOnly {
		where = append(where, `errors > 0`)
	}
	if f.Flagged {
		where = append(where, `(alerts > 0 OR divergences > 0)`)
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY `
	if o.Key != "" && !(o.Key == store.OrderStart && !o.Asc) {
		dir := " DESC"
		if o.Asc {
			dir = " ASC"
		}
		q += runOrderSQL[o.Key] + dir + `, `
	}
	q += `start_time_unix_nano DESC, trace_id`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return q, args
}

// indexedRuns lists f from the runs table of db, ordered by o (newest first for the zero o).
// With ranks (the file has the rankIndex indexes) it names the index the query walks, since
// SQLite, without statistics, would take a key's index for the cost or errors filter and sort
// the whole range: runs_session for a session, runs_start in start order and for a ranked
// listing whose time range holds fewer than rangeSortMax runs, else the key's index.
func indexedRuns(ctx context.Context, db queryer, f store.RunFilter, o store.RunOrder, tier string, ranks bool) ([]store.RunSummary, error) {
	if _, ok := runOrderSQL[o.Key]; o.Key != "" && !ok {
		return nil, fmt.Errorf("sqlite %s tier: order runs by %q: %w", tier, o.Key, errors.ErrUnsupported)
	}
	via, err := pickIndex(ctx, db, f, o, ranks)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s tier: list runs: %w", tier, err)
	}
	var out []store.RunSummary
	if via == "runs_errors" && o.Key == store.OrderErrors && f.Limit > 0 {
		out, err = byErrors(ctx, db, f, o, tier)
	} else {
		q, args := rankedRunsQuery(f, o, via)
		out, err = scanRuns(ctx, db, q, args, tier)
	}
	if err != nil {
		return nil, err
	}
	if f.SessionID == "" || !looksLikeTraceID(f.SessionID) {
		return out, nil
	}
	// The run of that id, when it names no session, is listed under its trace id.
	own, err := scanRuns(ctx, db, `SELECT `+runColumns+` FROM runs WHERE trace_id = ? AND session_id = ''`,
		[]any{strings.ToLower(f.SessionID)}, tier)
	if err != nil || len(own) == 0 {
		return out, err
	}
	if !f.Keep(own[0]) {
		return out, nil
	}
	out = append(out, own...)
	o.Sort(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// pickIndex names the index indexedRuns walks for f in order o ("" without ranks: SQLite picks):
//   - runs_session for a session;
//   - in start order, runs_start, unless f's cost filter (MinCostUSD) keeps fewer than
//     rangeSortMax runs: then those runs, read on runs_cost and sorted (a rare match is found
//     without walking every run of the range); with the error filter (ErrorsOnly), else
//     runs_failed (the failing runs in start order), and with the alerts filter (Flagged)
//     runs_flagged;
//   - in another order, the key's index, unless f's time range holds fewer than rangeSortMax
//     runs: then runs_start (the range, sorted).
func pickIndex(ctx context.Context, db queryer, f store.RunFilter, o store.RunOrder, ranks bool) (string, error) {
	switch {
	case !ranks:
		return "", nil
	case f.SessionID != "":
		return "runs_session", nil
	case rankIndex[o.Key] == "" || f.Limit <= 0:
		if f.MinCostUSD > 0 {
			if small, err := fewRuns(ctx, db, store.RunFilter{MinCostUSD: f.MinCostUSD}, "runs_cost"); err != nil || small {
				return "runs_cost", err
			}
		}
		switch {
		case f.ErrorsOnly:
			return "runs_failed", nil
		case f.Flagged:
			return "runs_flagged", nil
		}
		return "runs_start", nil
	case f.Since.IsZero() && f.Until.IsZero():
		return rankIndex[o.Key], nil
	}
	small, err := fewRuns(ctx, db, store.RunFilter{Since: f.Since, Until: f.Until}, "runs_start")
	if small {
		return "runs_start", err
	}
	return rankIndex[o.Key], err
}

// byErrors is the listing of f ordered by errors (o) through the partial index runs_errors: the
// runs with errors on it, the runs without (errors 0, newest first, as ties are) on runs_start,
// after them descending and before them ascending, up to f.Limit.
func byErrors(ctx context.Context, db queryer, f store.RunFilter, o store.RunOrder, tier string) ([]store.RunSummary, error) {
	with := func(limit int) ([]store.RunSummary, error) {
		g := f
		g.Limit = limit
		q, args := rankedRunsQuery(g, o, "runs_errors", "errors > 0")
		return scanRuns(ctx, db, q, args, tier)
	}
	without := func(limit int) ([]store.RunSummary, error) {
		if f.ErrorsOnly {
			return nil, nil
		}
		g := f
		g.Limit = limit
		q, args := rankedRunsQuery(g, store.RunOrder{}, "runs_start", "errors = 0")
		return scanRuns(ctx, db, q, args, tier)
	}
	first, second := with, without
	if o.Asc {
		first, second = without, with
	}
	out, err := first(f.Limit)
	if err != nil || len(out) >= f.Limit {
		return out, err
	}
	more, err := second(f.Limit - len(out))
	return append(out, more...), err
}

// fewRuns reports whether fewer than rangeSortMax runs match g (its time range, cost and error
// filters), reading at most that many rows of index.
func fewRuns(ctx context.Context, db queryer, g store.RunFilter, index string) (bool, error) {
	g.Limit = rangeSortMax
	q, args := rankedRunsQuery(g, store.RunOrder{}, index)
	if i := strings.Index(q, " ORDER BY "); i >= 0 {
		q = q[:i] + fmt.Sprintf(" LIMIT %d", rangeSortMax) // any rows: the index's order
	}
	rows, err := db.QueryContext(ctx, `SELECT COUNT(*) FROM (`+strings.Replace(q, runColumns, "1", 1)+`)`, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return false, err
		}
	}
	return n < rangeSortMax, rows.Err()
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
// cost (USD), unpriced calls, roots, orphans, alert records.
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
			&r.OutputTokens, &r.Errors, &r.CostUSD, &r.Unpriced, &roots, &r.Orphans, &r.Alerts, &r.Divergences); err != nil {
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

// # Incremental maintenance (the writers)
//
// Recomputing each touched run from all of its span rows made every batch pay for the spans
// stored before it. A writer instead inserts its span rows with ON CONFLICT DO NOTHING, hands each
// row it inserted (RowsAffected 1) to a runBatch, and apply adds what those rows contribute to
// their runs' index rows: sums and counts added, minimum start and maximum end, the greatest
// session and service, the union of models. A row that already existed (an at-least-once retry)
// contributes nothing; the writer replaces it (its content and ingestion time, as before) and
// names its run with replaced, and that run is recomputed from its rows (fill), which is exact
// whatever the old row held. So a retried batch is never counted twice.
//
// Orphans (spans whose parent is not stored) are kept exact with the orphans table: one row per
// (run, missing parent span id) with the number of stored spans waiting for it. A new span
// removes the row naming it (its waiting children are orphans no more); a new span whose parent
// is not stored adds itself to its parent's row. Its rows are deleted with the run's span rows
// (trigger) and rebuilt with the run's index row wherever a run is recomputed.
//
//	span_orphans (hot; warm: summary_orphans)
//	  trace_id        TEXT     the run
//	  parent_span_id  TEXT     a parent span id that no stored span of the run has
//	  spans           INTEGER  stored spans of the run naming it as their parent
//	  primary key (trace_id, parent_span_id), WITHOUT ROWID

// orphansDDL creates x's orphans table and its delete trigger.
func (x runIndex) orphansDDL() string {
	return `
CREATE TABLE IF NOT EXISTS ` + x.orphans + ` (
  trace_id       TEXT    NOT NULL,
  parent_span_id TEXT    NOT NULL,
  spans          INTEGER NOT NULL,
  PRIMARY KEY (trace_id, parent_span_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ` + x.spans + `_orphans_delete AFTER DELETE ON ` + x.spans + ` BEGIN
  DELETE FROM ` + x.orphans + ` WHERE trace_id = old.trace_id;
END;
`
}

// fillOrphans returns the statement that (re)fills the orphans rows of the traces where selects
// (after deleting them).
func (x runIndex) fillOrphans(where string) string {
	return `INSERT INTO ` + x.orphans + ` (trace_id, parent_span_id, spans)
	  SELECT trace_id, parent_span_id, COUNT(*) FROM ` + x.spans + ` AS s WHERE (` + where + `) AND parent_span_id != ''
	    AND NOT EXISTS (SELECT 1 FROM ` + x.spans + ` p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)
	  GROUP BY trace_id, parent_span_id`
}

// buildOrphansSQL creates and fills the orphans table from every span row (a migration).
func (x runIndex) buildOrphansSQL() string {
	return x.orphansDDL() + `DELETE FROM ` + x.orphans + `;` + x.fillOrphans("1") + ";"
}

// SpanFacts is what one span row contributes to its run's index row.
type SpanFacts struct {
	TraceID, SpanID, ParentSpanID    string // lowercase hex; ParentSpanID '' for a root
	SessionID, Service, Agent, Model string
	Start, End                       int64 // Unix ns
	InputTokens, OutputTokens        int64
	Error                            bool // status code 2
	CostUSD                          float64
	Unpriced                         bool
	// Exchange: a recorded HTTP exchange with derived GenAI attributes; Edited: one a rerun's
	// --set changed (store.EditedExchange); LLM: an instrumented LLM call (genai kind llm, not an
	// exchange). All for the counting rule (countrule.go).
	Exchange, Edited, LLM bool
	// Signal: the span can make its run fail (patterns.SpanSignal): its run's failure signature
	// is computed after the commit (patternindex.go).
	Signal bool
}

// runDelta is what a batch's inserted rows add to one run.
type runDelta struct {
	session, service, agent string
	start, end              int64
	spans, input, output    int64
	errors, unpriced, roots int64
	orphans                 int64
	cost                    float64
	models                  []string
	sessions                []string // the distinct non-empty sessions of the rows
}

func (r *runDelta) add(f SpanFacts) {
	if r.spans == 0 || f.Start < r.start {
		r.start = f.Start
	}
	r.end = max(r.end, f.End, f.Start)
	r.session = max(r.session, f.SessionID)
	r.service = max(r.service, f.Service)
	r.agent = max(r.agent, f.Agent)
	r.spans++
	r.input += f.InputTokens
	r.output += f.OutputTokens
	r.cost += f.CostUSD
	if f.Error {
		r.errors++
	}
	if f.Unpriced {
		r.unpriced++
	}
	if f.ParentSpanID == "" {
		r.roots++
	}
	r.models = addModel(r.models, f.Model)
	r.sessions = addModel(r.sessions, f.SessionID)
}

func addModel(models []string, m string) []string {
	if m == "" {
		return models
	}
	for _, have := range models {
		if have == m {
			return models
		}
	}
	return append(models, m)
}

// RunBatch collects, in one write transaction, the span rows the writer inserted and the runs it
// must recompute, for runIndex.apply. The zero value is ready.
type RunBatch struct {
	// Ingested is the transaction's ingestion time (Unix ns): the index rows' ingested_unix_nano.
	Ingested int64

	order []string
	runs  map[string]*runDelta
	spans []SpanFacts        // inserted rows, in order
	ids   map[[2]string]bool // (trace, span) of inserted rows
	full  traceSet           // runs recomputed from their rows
	// alerts and divergences are the alert and replay divergence records inserted, by run
	alerts, divergences recordCounts
	// exchanges are the (trace, span) of rows that make the counting rule apply (countrule.go);
	// llm the instrumented LLM rows inserted
	exchanges [][3]any // trace, span, 1 for a derived exchange, 2 for an edited one (0: a nested LLM call)
	llm       []SpanFacts
	// signals are the runs whose rows or records can make them fail (patternindex.go)
	signals traceSet
}

// Signal records that the transaction wrote a row or record that can make the run traceID fail
// (a divergence record; spans say so in SpanFacts.Signal, alerts through Alert).
func (b *RunBatch) Signal(traceID string) { b.signals.add(traceID) }

// Exchange records that the transaction wrote the span row f of a derived exchange (inserted
// or replaced): its run is counted by the rule.
func (b *RunBatch) Exchange(f SpanFacts) {
	switch {
	case f.Exchange && f.Edited:
		b.exchanges = append(b.exchanges, [3]any{f.TraceID, f.SpanID, 2})
	case f.Exchange:
		b.exchanges = append(b.exchanges, [3]any{f.TraceID, f.SpanID, 1})
	}
	if f.LLM {
		b.llm = append(b.llm, f)
	}
	if f.Signal {
		b.signals.add(f.TraceID)
	}
}

// Inserted records a span row the transaction inserted (it did not exist).
func (b *RunBatch) Inserted(f SpanFacts) {
	if b.runs == nil {
		b.runs, b.ids = map[string]*runDelta{}, map[[2]string]bool{}
	}
	r := b.runs[f.TraceID]
	if r == nil {
		r = &runDelta{}
		b.runs[f.TraceID] = r
		b.order = append(b.order, f.TraceID)
	}
	r.add(f)
	b.Exchange(f)
	b.spans = append(b.spans, f)
	b.ids[[2]string{f.TraceID, f.SpanID}] = true
}

// Replaced records that the transaction replaced an existing row of the run traceID: the run is
// recomputed from its rows.
func (b *RunBatch) Replaced(traceID string) { b.full.add(traceID) }

// traces returns the runs of the batch's span rows.
func (b *RunBatch) traces() []string {
	var all traceSet
	for _, id := range b.order {
		all.add(id)
	}
	for _, id := range b.full.ids {
		all.add(id)
	}
	return all.ids
}

// Alert records an alert record the transaction inserted for the run traceID.
func (b *RunBatch) Alert(traceID string) {
	if traceID == "" {
		return
	}
	b.signals.add(traceID)
	b.alerts.add(traceID)
}

// Divergence records a replay divergence record the transaction inserted for the run traceID
// (runagainattr.EventDivergence; a signal too).
func (b *RunBatch) Divergence(traceID string) {
	if traceID == "" {
		return
	}
	b.signals.add(traceID)
	b.divergences.add(traceID)
}

// recordCounts counts a batch's records of one kind by run, runs in first-seen order.
type recordCounts struct {
	n   map[string]int64
	ids []string
}

func (c *recordCounts) add(traceID string) {
	if c.n == nil {
		c.n = map[string]int64{}
	}
	if c.n[traceID] == 0 {
		c.ids = append(c.ids, traceID)
	}
	c.n[traceID]++
}

// apply brings the index rows of the batch's runs up to date in tx (the batch's transaction). It
// issues a fixed number of statements per batch over the batch's spans (JSON arrays through
// json_each), not one per span, and one prepared statement per run it writes (applyRuns).
func (x runIndex) apply(ctx context.Context, tx *sql.Tx, b *RunBatch) error {
	if err := x.applyOrphans(ctx, tx, b); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	if err := x.applyRuns(ctx, tx, b); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	if err := x.rebuild(ctx, tx, b.full.ids, false); err != nil {
		return err
	}
	for _, c := range []struct {
		column string
		counts *recordCounts
	}{{"alerts", &b.alerts}, {"divergences", &b.divergences}} {
		var add [][2]any
		for _, id := range c.counts.ids {
			if !b.full.seen[id] && b.runs[id] == nil { // else counted from the records when its row was made
				add = append(add, [2]any{id, c.counts.n[id]})
			}
		}
		if len(add) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET `+c.column+` = `+c.column+` + j.n
			  FROM (SELECT value->>0 AS trace_id, value->>1 AS n FROM json_each(?)) AS j WHERE runs.trace_id = j.trace_id`,
				jsonArg(add)); err != nil {
				return fmt.Errorf("run index: %w", err)
			}
		}
	}
	return x.applyRule(ctx, tx, b.order)
}

// jsonArg encodes v (slices of strings and numbers) as a JSON text argument for json_each.
func jsonArg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and numbers always encode
	}
	return string(b)
}

// applyOrphans updates the orphans rows and each run delta's orphans count for the inserted rows.
func (x runIndex) applyOrphans(ctx context.Context, tx *sql.Tx, b *RunBatch) error {
	var withParent [][2]string
	var traces []string
	none := true
	for _, f := range b.spans {
		if b.full.seen[f.TraceID] {
			continue
		}
		none = false
		if f.ParentSpanID != "" && !b.ids[[2]string{f.TraceID, f.ParentSpanID}] {
			withParent = append(withParent, [2]string{f.TraceID, f.ParentSpanID})
		}
	}
	if none {
		return nil
	}
	for _, id := range b.order {
		if !b.full.seen[id] {
			traces = append(traces, id)
		}
	}
	// Stored children waiting for a span of this batch are orphans no more (their rows predate
	// the batch: the batch's own orphans are added after). The orphans rows of the batch's runs
	// are read (usually none) and matched with the inserted spans here, rather than looking up
	// every inserted span in the table.
	rows, err := tx.QueryContext(ctx, `SELECT trace_id, parent_span_id, spans FROM `+x.orphans+`
	  WHERE trace_id IN (SELECT value FROM json_each(?))`, jsonArg(traces))
	if err != nil {
		return err
	}
	var found [][2]string
	for rows.Next() {
		var k [2]string
		var n int64
		if err := rows.Scan(&k[0], &k[1], &n); err != nil {
			rows.Close()
			return err
		}
		if b.ids[k] {
			found = append(found, k)
			b.runs[k[0]].orphans -= n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(found) > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+x.orphans+` WHERE (trace_id, parent_span_id) IN
		  (SELECT value->>0, value->>1 FROM json_each(?))`, jsonArg(found)); err != nil {
			return err
		}
	}
	if len(withParent) == 0 {
		return nil
	}
	// New spans whose parent is not stored (nor in the batch) wait for it.
	rows, err = tx.QueryContext(ctx, `SELECT value->>0, value->>1 FROM json_each(?) AS j
	  WHERE NOT EXISTS (SELECT 1 FROM `+x.spans+` p WHERE p.trace_id = j.value->>0 AND p.span_id = j.value->>1)`, jsonArg(withParent))
	if err != nil {
		return err
	}
	waiting := map[[2]string]int64{}
	var order [][2]string
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return err
		}
		if waiting[k] == 0 {
			order = append(order, k)
		}
		waiting[k]++
		b.runs[k[0]].orphans++
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(order) == 0 {
		return err
	}
	add := make([][3]any, len(order))
	for i, k := range order {
		add[i] = [3]any{k[0], k[1], waiting[k]}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+x.orphans+` (trace_id, parent_span_id, spans)
	  SELECT value->>0, value->>1, value->>2 FROM json_each(?) WHERE true
	  ON CONFLICT (trace_id, parent_span_id) DO UPDATE SET spans = spans + excluded.spans`, jsonArg(add))
	return err
}

// runRow is an index row's values (without trace id and ingestion time).
type runRow struct {
	session, models, service, agent          string
	start, end, spans, input, output         int64
	errors, unpriced, roots, orphans, alerts int64
	divergences                              int64
	cost                                     float64
}

// applyRuns adds each run delta of b to its index row, creating it for a new run. A run whose
// rows predate the batch but that has no index row (its rows were deleted in part by a plain
// DELETE) is recomputed instead.
func (x runIndex) applyRuns(ctx context.Context, tx *sql.Tx, b *RunBatch) error {
	var ids []string
	for _, id := range b.order {
		if !b.full.seen[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cur := map[string]*runRow{}
	rows, err := tx.QueryContext(ctx, `SELECT trace_id, session_id, models, service_name, agent_name, start_time_unix_nano,
	  end_time_unix_nano, spans, input_tokens, output_tokens, errors, unpriced, roots, orphans, alerts, divergences, cost_usd
	  FROM runs WHERE trace_id IN (SELECT value FROM json_each(?))`, jsonArg(ids))
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var r runRow
		if err := rows.Scan(&id, &r.session, &r.models, &r.service, &r.agent, &r.start, &r.end, &r.spans,
			&r.input, &r.output, &r.errors, &r.unpriced, &r.roots, &r.orphans, &r.alerts, &r.divergences, &r.cost); err != nil {
			rows.Close()
			return err
		}
		cur[id] = &r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var fresh []string
	for _, id := range ids {
		if cur[id] == nil {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) > 0 {
		// A new run: its rows are the batch's (else it lost its index row to a DELETE: recompute),
		// its alert and divergence records may have come first.
		rows, err := tx.QueryContext(ctx, `SELECT s.trace_id, (SELECT COUNT(*) FROM `+x.spans+` c WHERE c.trace_id = s.trace_id), `+x.alerts+`,
		    `+x.divergences+` FROM (SELECT value AS trace_id FROM json_each(?)) AS s`, jsonArg(fresh))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var stored, alerts, divergences int64
			if err := rows.Scan(&id, &stored, &alerts, &divergences); err != nil {
				rows.Close()
				return err
			}
			if stored != b.runs[id].spans {
				b.full.add(id)
				continue
			}
			d := b.runs[id]
			cur[id] = &runRow{start: d.start, end: d.end, alerts: alerts, divergences: divergences}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	// A run whose row exists and keeps its session and start (the usual continuation) is updated
	// in place: its two indexes (start; session, start) are not touched. New rows and rows whose
	// session or start changes are (re)written whole.
	var whole, same [][]any
	var others []any // (session, trace) pairs for x.sessions
	existed := map[string]bool{}
	for id := range cur {
		existed[id] = true
	}
	for _, id := range fresh {
		existed[id] = false
	}
	for _, id := range ids {
		r, d := cur[id], b.runs[id]
		if r == nil || b.full.seen[id] {
			continue
		}
		models := r.models
		for _, m := range d.models {
			if !containsModel(models, m) {
				if models != "" {
					models += ","
				}
				models += m
			}
		}
		session, start := max(r.session, d.session), min(r.start, d.start)
		if x.sessions != "" {
			if r.session != "" && r.session != session {
				others = append(others, r.session, id)
			}
			for _, s := range d.sessions {
				if s != session {
					others = append(others, s, id)
				}
			}
		}
		if existed[id] && session == r.session && start == r.start {
			same = append(same, []any{id, max(r.end, d.end), r.spans + d.spans, models, max(r.service, d.service),
				max(r.agent, d.agent), r.input + d.input, r.output + d.output, r.errors + d.errors, r.cost + d.cost,
				r.unpriced + d.unpriced, r.roots + d.roots, r.orphans + d.orphans, b.Ingested})
			continue
		}
		whole = append(whole, []any{id, session, start, max(r.end, d.end), r.spans + d.spans,
			models, max(r.service, d.service), max(r.agent, d.agent), r.input + d.input, r.output + d.output,
			r.errors + d.errors, r.cost + d.cost, r.unpriced + d.unpriced, r.roots + d.roots, r.orphans + d.orphans,
			r.alerts, b.Ingested, r.divergences})
	}
	if len(others) > 0 {
		if _, err := tx.ExecContext(ctx, valuesSQL(`INSERT OR IGNORE INTO `+x.sessions+` (session_id, trace_id) VALUES`,
			"(?,?)", len(others)/2, ""), others...); err != nil {
			return err
		}
	}
	if len(same) > 0 {
		// One prepared UPDATE per run: cheaper than one statement over a JSON array of them,
		// whose members SQLite parses again for every column it reads.
		st, err := tx.PrepareContext(ctx, `UPDATE runs SET end_time_unix_nano = ?2, spans = ?3, models = ?4,
		    service_name = ?5, agent_name = ?6, input_tokens = ?7, output_tokens = ?8, errors = ?9, cost_usd = ?10,
		    unpriced = ?11, roots = ?12, orphans = ?13, ingested_unix_nano = ?14 WHERE trace_id = ?1`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, args := range same {
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
	}
	if len(whole) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO runs (trace_id, session_id, start_time_unix_nano,
	  end_time_unix_nano, spans, models, service_name, agent_name, input_tokens, output_tokens, errors, cost_usd, unpriced,
	  roots, orphans, alerts, ingested_unix_nano, divergences) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, args := range whole {
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// containsModel reports whether the comma-joined list holds m.
func containsModel(list, m string) bool {
	for list != "" {
		i := strings.IndexByte(list, ',')
		if i < 0 {
			return list == m
		}
		if list[:i] == m {
			return true
		}
		list = list[i+1:]
	}
	return false
}

// rebuild recomputes the orphans rows (where x has them) and the index rows of traceIDs from
// their span rows; with mayVanish a run without span rows loses its index row.
func (x runIndex) rebuild(ctx context.Context, e Execer, traceIDs []string, mayVanish bool) error {
	if len(traceIDs) == 0 {
		return nil
	}
	ids := idsJSON(traceIDs) // one JSON array for every statement below
	if x.orphans != "" {
		if _, err := e.ExecContext(ctx, `DELETE FROM `+x.orphans+` WHERE trace_id IN (SELECT value FROM json_each(?))`, ids); err != nil {
			return fmt.Errorf("run index: %w", err)
		}
		if _, err := e.ExecContext(ctx, x.fillOrphans(`trace_id IN (SELECT value FROM json_each(?))`), ids); err != nil {
			return fmt.Errorf("run index: %w", err)
		}
	}
	if err := x.recompute(ctx, e, ids, mayVanish); err != nil {
		return err
	}
	if err := x.applyRule(ctx, e, traceIDs); err != nil {
		return err
	}
	if x.sessions == "" {
		return nil
	}
	if _, err := e.ExecContext(ctx, `DELETE FROM `+x.sessions+` WHERE trace_id IN (SELECT value FROM json_each(?))`, ids); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	if _, err := e.ExecContext(ctx, x.fillSessions(`s.trace_id IN (SELECT value FROM json_each(?))`), ids); err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	return nil
}
