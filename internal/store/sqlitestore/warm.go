// SPDX-License-Identifier: Apache-2.0

package sqlitestore

// # Warm tier schema (a contract like the hot one; version 4, its own file, e.g. <data>/warm.db)
//
//	span_summaries: one row per span, unique on (trace_id, span_id); no payloads
//	  trace_id, span_id, parent_span_id, session_id, name      TEXT (hex ids as in the hot tier)
//	  kind, status_code                                         INTEGER (OTLP enums)
//	  start_time_unix_nano, end_time_unix_nano                  INTEGER
//	  status_message, service_name, genai_kind, model           TEXT
//	  input_tokens, output_tokens                               INTEGER
//	  cost_usd                                                  REAL USD (pricing.Prices.SpanCost: table + overrides)
//	  unpriced                                                  INTEGER 1: LLM call with usage, no known price
//	  tool_name, agent_name, error_type                         TEXT ('' when absent)
//	  attributes                                                the JSON object of the summary attributes
//	                                                            (store.SummaryAttribute), stored as TEXT
//	                                                            (version 2 rows, short objects) or as one
//	                                                            zstd frame of it (BLOB, RFC 8878; version 3),
//	                                                            or its compact form (BLOB; version 4;
//	                                                            warmattrs.go): decode with WarmDB.Run
//	  ingested_unix_nano                                        INTEGER (retention clock)
//	  indexes: the unique (trace_id, span_id) and span_summaries_ingested (expiry)
//
//	key_events: exceptions (span events) and alerts (log records), unique on event_id
//	  event_id TEXT (SHA-256 hex), trace_id, span_id, session_id TEXT, time_unix_nano INTEGER,
//	  kind TEXT (exception | alert), name TEXT, severity_number INTEGER, service_name TEXT,
//	  message TEXT, attributes TEXT (JSON), ingested_unix_nano INTEGER
//
//	runs: the run index (runindex.go), one row per run; summary_orphans: its orphan counts
//
// Every query of the file is served by the run index (listings by time or session) or by the
// (trace_id, span_id) index (a run's rows, the index maintenance): version 3 dropped the
// span_summaries indexes on start time and on session id, which no query used since the run
// index (an erasure by session scans the table; erasures are rare and run offline).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// WarmSchemaVersion is the warm file's PRAGMA user_version. Version 2 added the run index
// (RunsTable): a version 1 file opened for writing builds it once from its summaries; opened
// read-only it is listed by aggregating its summaries. Version 3 stores the attributes column
// compressed and drops two indexes no query uses: a version 2 file opened for writing loses the
// indexes (its rows stay as they are: readers decode both forms); opened read-only it is read as
// it is. Version 4 maintains the run index incrementally (its orphans table summary_orphans,
// runindex.go) and stores the attributes in a compact form (warmattrs.go): a version 3 file
// opened for writing builds the orphans table from its rows; read-only it is read as it is.
// Version 5 gives the run index the divergences column and runs_flagged, as the hot file's
// version 9 (the warm file keeps no divergence record: its count is 0, runs_flagged its runs
// with alerts).
const WarmSchemaVersion = 5

// warmMigrations bring an older warm file up to WarmSchemaVersion (openFile).
var warmMigrations = map[int]string{
	1: warmIndex.buildSQL(),
	2: `DROP INDEX IF EXISTS span_summaries_start; DROP INDEX IF EXISTS span_summaries_session;`,
	3: warmIndex.buildOrphansSQL(),
	4: `SELECT 1;`, // the runs table's divergences column: ensureFlags, which checks for it
}

const warmDDL = `
CREATE TABLE IF NOT EXISTS span_summaries (
  trace_id             TEXT    NOT NULL,
  span_id              TEXT    NOT NULL,
  parent_span_id       TEXT    NOT NULL,
  session_id           TEXT    NOT NULL,
  name                 TEXT    NOT NULL,
  kind                 INTEGER NOT NULL,
  start_time_unix_nano INTEGER NOT NULL,
  end_time_unix_nano   INTEGER NOT NULL,
  status_code          INTEGER NOT NULL,
  status_message       TEXT    NOT NULL,
  service_name         TEXT    NOT NULL,
  genai_kind           TEXT    NOT NULL,
  model                TEXT    NOT NULL,
  input_tokens         INTEGER NOT NULL,
  output_tokens        INTEGER NOT NULL,
  cost_usd             REAL    NOT NULL,
  unpriced             INTEGER NOT NULL,
  tool_name            TEXT    NOT NULL,
  agent_name           TEXT    NOT NULL,
  error_type           TEXT    NOT NULL,
  attributes           BLOB    NOT NULL,
  ingested_unix_nano   INTEGER NOT NULL,
  UNIQUE (trace_id, span_id)
);
CREATE INDEX IF NOT EXISTS span_summaries_ingested ON span_summaries (ingested_unix_nano);
CREATE TABLE IF NOT EXISTS key_events (
  event_id             TEXT    NOT NULL PRIMARY KEY,
  trace_id             TEXT    NOT NULL,
  span_id              TEXT    NOT NULL,
  session_id           TEXT    NOT NULL,
  time_unix_nano       INTEGER NOT NULL,
  kind                 TEXT    NOT NULL,
  name                 TEXT    NOT NULL,
  severity_number      INTEGER NOT NULL,
  service_name         TEXT    NOT NULL,
  message              TEXT    NOT NULL,
  attributes           TEXT    NOT NULL,
  ingested_unix_nano   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS key_events_trace ON key_events (trace_id);
CREATE INDEX IF NOT EXISTS key_events_ingested ON key_events (ingested_unix_nano);
`

// WarmDB is an open warm-tier SQLite file.
type WarmDB struct {
	db          *sql.DB
	noPatterns  bool           // Options.NoSignatures
	memo        *patterns.Memo // Options.Memo
	signs       *signQueue     // the marked runs waiting to be signed (Options.SignDelay)
	variants    *variantSet    // the variants pattern_signatures holds (writeSignatures)
	sessionKeys []string
	now         func() time.Time
	prices      *pricing.Prices
	version     int  // the file's schema version (1: no run index, read-only)
	ranks       bool // the run index has its rankIndex indexes (runindex.go)
	flags       bool // the run index has its divergences column (ensureFlags)
	// recomputeIndex recomputes each touched run from its rows instead of applying the batch
	// (the benchmark's baseline).
	recomputeIndex bool
	// rowByRow writes each summary with its own INSERT (the benchmark's baseline; the path a
	// batch with an already stored summary takes).
	rowByRow bool
	// noSettle makes a multi-row write that met a stored summary roll back and write the batch
	// again row by row, as the writer before settleChunk did (the benchmark's baseline).
	noSettle bool
	// rewrites counts the batches written again row by row after a multi-row write met a
	// summary it could not settle (settleChunk; tests).
	rewrites atomic.Int64

	stmts stmtCache // the writer's statements (warmSQL), prepared when the file is opened for writing
}

// warmPageSize is the page size in bytes of a warm file OpenWarm creates (OpenWarm).
const warmPageSize = 16 << 10

// OpenWarm opens (creating unless ReadOnly) the warm-tier SQLite file at path.
func OpenWarm(path string, o Options) (*WarmDB, error) {
	db, version, err := openFile(path, o, "warm", warmDDL+warmIndex.ddl(), WarmSchemaVersion, warmMigrations,
		// A new file gets 16 KiB pages (SQLite's default is 4 KiB): a batch's rows fill a quarter
		// as many pages, so its commit appends a quarter as many WAL frames (two pwrites each) and
		// the checkpoint copies a quarter as many pages back (BenchmarkWarmWrite "apply" against
		// "before"). The page size is fixed once the file has a page: it applies to a new file
		// only (openFile); an existing file keeps its own (a 4 KiB file of an earlier build is
		// read and written as it is). The page cache stays SQLite's default (2 MiB): with 16 KiB
		// pages an 8 MiB one measured no faster and took about 100 MB more RSS in a test process
		// writing 60 batches (VmHWM 144 MB against 41 MB).
		// https://www.sqlite.org/pragma.html#pragma_page_size
		"page_size("+strconv.Itoa(warmPageSize)+")",
		// A multi-row INSERT keeps a statement journal (the pages it changed, to undo a statement
		// that fails half way): in memory rather than in a temporary file (write).
		"temp_store(MEMORY)")
	if err != nil {
		return nil, err
	}
	flags, err := openFlags(context.Background(), db, warmIndex, version >= 2, o.ReadOnly)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite warm tier: %s: %w", path, err)
	}
	w := &WarmDB{db: db, sessionKeys: o.SessionKeys, now: o.Now, prices: o.Prices, version: version, noPatterns: o.NoSignatures, memo: o.Memo, variants: newVariantSet(),
		ranks: version >= 2 && hasRankIndexes(context.Background(), db), flags: flags}
	if !o.ReadOnly {
		if err := w.stmts.prepareKeys(context.Background(), db, warmKeys(), warmSQL); err != nil {
			w.stmts.close()
			db.Close()
			return nil, fmt.Errorf("sqlite warm tier: %s: %w", path, err)
		}
	}
	if w.sessionKeys == nil {
		w.sessionKeys = genai.DefaultSessionKeys
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.signs = newSignQueue(o.SignDelay, func(ctx context.Context, ids []string) {
		_ = signRuns(ctx, w.db, &w.stmts, w.variants, w.Run, w.fingerprint, w.keys(), w.memo, ids)
	})
	return w, nil
}

// openFile opens a tier's SQLite file: for writing (created, WAL mode, one connection, schema
// created or migrated and user_version set) or, with o.ReadOnly, for reading an existing file of
// this schema version or an older one listed in migrations. migrations[v] is the SQL that brings
// a version v file to version v+1. It returns the file's schema version (version when opened for
// writing). Errors name the tier and the path.
func openFile(path string, o Options, tier, ddl string, version int, migrations map[int]string, pragmas ...string) (*sql.DB, int, error) {
	if !o.ReadOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, 0, fmt.Errorf("sqlite %s tier: create directory for %s: %w", tier, path, err)
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, 0, fmt.Errorf("sqlite %s tier: %w", tier, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if !o.ReadOnly {
		for _, p := range pragmas {
			q.Add("_pragma", p)
		}
		// Setting the journal mode writes the file header: a reader must not (the mode persists
		// in the file the collector created). The driver runs _journal_mode after every _pragma
		// (which it sorts by name), so a page_size among pragmas applies to a new file
		// (modernc.org/sqlite's Driver doc; https://www.sqlite.org/pragma.html#pragma_page_size).
		q.Add("_journal_mode", "WAL")
		q.Add("_synchronous", "NORMAL")
		q.Add("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite %s tier: open %s: %w", tier, path, err)
	}
	fail := func(err error) (*sql.DB, int, error) {
		db.Close()
		return nil, 0, fmt.Errorf("sqlite %s tier: %s: %w", tier, path, err)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fail(err)
	}
	if !o.ReadOnly {
		db.SetMaxOpenConns(1)
		for ; v > 0 && v < version; v++ {
			m, ok := migrations[v]
			if !ok {
				return fail(fmt.Errorf("schema version %d cannot be migrated to %d", v, version))
			}
			if _, err := db.Exec(m); err != nil {
				return fail(fmt.Errorf("migrate schema version %d to %d: %w", v, v+1, err))
			}
		}
		if v > version {
			return fail(fmt.Errorf("schema version %d is newer than this build's %d", v, version))
		}
		if _, err := db.Exec(ddl); err != nil {
			return fail(fmt.Errorf("create schema: %w", err))
		}
		if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
			return fail(err)
		}
		return db, version, nil
	}
	if _, older := migrations[v]; v != version && !older {
		db.Close()
		return nil, 0, fmt.Errorf("sqlite %s tier: %s has schema version %d, this build reads %d", tier, path, v, version)
	}
	return db, v, nil
}

// Close closes the database.
func (w *WarmDB) Close() error {
	w.signs.close()
	w.stmts.close()
	return w.db.Close()
}

// SQL exposes the handle for tests.
func (w *WarmDB) SQL() *sql.DB { return w.db }

// Expire deletes summaries and key events ingested before cutoff; it returns the rows deleted.
func (w *WarmDB) Expire(ctx context.Context, cutoff time.Time) (int64, error) {
	return expireTables(ctx, w.db, cutoff, nil, &warmIndex, "span_summaries", "key_events")
}

// ExpireExcept is Expire keeping every summary and key event of the runs in pinned (dataset pins).
func (w *WarmDB) ExpireExcept(ctx context.Context, cutoff time.Time, pinned map[string]bool) (int64, error) {
	return expireTables(ctx, w.db, cutoff, pinned, &warmIndex, "span_summaries", "key_events")
}

// WriteTraces stores the summaries and exception events of td in one transaction (idempotent).
func (w *WarmDB) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	spans, events := store.SummarizeSignals(td, w.sessionKeys, w.prices, w.spanSignal())
	return w.write(ctx, spans, events)
}

// WriteLogs stores the alert records of ld as key events (idempotent).
func (w *WarmDB) WriteLogs(ctx context.Context, ld plog.Logs) error {
	return w.write(ctx, nil, store.AlertEvents(ld, w.sessionKeys))
}

// spanSignal is the check TraceRecords and WriteTraces give the summariser: patterns.SpanSignal,
// or none when the writer signs no run (Options.NoSignatures: nothing reads the signals).
func (w *WarmDB) spanSignal() func(pcommon.Map) bool {
	if w.noPatterns {
		return nil
	}
	return patterns.SpanSignal
}

// TraceRecords is what WriteTraces stores of td (store.Summarize with the file's session keys
// and prices), built without writing: the tiered exporter builds it before the warm tier's
// sending queue and writes it with WriteRecords.
func (w *WarmDB) TraceRecords(td ptrace.Traces) store.Records {
	spans, events := store.SummarizeSignals(td, w.sessionKeys, w.prices, w.spanSignal())
	return store.Records{Spans: spans, Events: events}
}

// LogRecords is what WriteLogs stores of ld (its alerts as key events).
func (w *WarmDB) LogRecords(ld plog.Logs) store.Records {
	return store.Records{Events: store.AlertEvents(ld, w.sessionKeys)}
}

// WriteRecords stores the span summaries and key events of r in one transaction (idempotent, as
// WriteTraces); r's partials are not the warm tier's and are ignored.
func (w *WarmDB) WriteRecords(ctx context.Context, r store.Records) error {
	return w.write(ctx, r.Spans, r.Events)
}

const (
	summaryColumnList = `(trace_id, span_id, parent_span_id, session_id, name, kind, start_time_unix_nano, end_time_unix_nano,
	   status_code, status_message, service_name, genai_kind, model, input_tokens, output_tokens, cost_usd,
	   unpriced, tool_name, agent_name, error_type, attributes, ingested_unix_nano)`
	summaryPlaceholders = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	summaryColumns      = summaryColumnList + ` VALUES ` + summaryPlaceholders
)

// write stores spans and events in one transaction. A summary already stored (same trace and
// span id: an at-least-once retry) is replaced, a key event already stored (its id is the hash of
// its content) has its retention clock moved; the run index counts each row once (RunBatch, the
// incremental maintenance of runindex.go).
//
// The summaries go in multi-row INSERTs (warmInsertSizes rows a statement, prepared when the
// file is opened, warmSQL): a batch whose rows are all new (the usual case) costs one statement per 64 rows instead
// of one per row. When a statement inserts fewer rows than it carries, some summary was already
// stored (a retry, or the same span twice in the batch): the rows of that statement are told
// apart and the stored ones replaced in the same transaction (settleChunk). Only when they
// cannot be told apart is the transaction rolled back and the batch written again row by row.
func (w *WarmDB) write(ctx context.Context, spans []store.SpanSummary, events []store.KeyEvent) error {
	if len(spans) == 0 && len(events) == 0 {
		return nil
	}
	if !w.rowByRow {
		err := w.writeTx(ctx, spans, events, true)
		if !errors.Is(err, errAlreadyStored) {
			return err
		}
		w.rewrites.Add(1)
	}
	return w.writeTx(ctx, spans, events, false)
}

// errAlreadyStored ends a multi-row write that met a summary already stored.
var errAlreadyStored = errors.New("sqlite warm tier: a summary of the batch is already stored")

// warmInsertSizes are the row counts of the multi-row summary INSERTs, largest first: a batch is
// written in statements of 64 rows, its remainder in at most one of each smaller size. 64 rows
// bind 1408 parameters (SQLite's limit is 32766 since 3.32).
var warmInsertSizes = [...]int{warmInsertRows, 32, 16, 8, 4, 2, 1}

// warmInsertRows is the largest multi-row INSERT's row count.
const warmInsertRows = 64

// summaryArgs is the number of parameters of one summary row.
const summaryArgs = 22

// The warm writer's statements (warmSQL, in its stmtCache).
var (
	stmtWarmReplace    = stmtKey{kind: "warm.replace"}
	stmtWarmEvent      = stmtKey{kind: "warm.event"}
	stmtWarmEventAgain = stmtKey{kind: "warm.event-again"}
)

func stmtWarmSummaries(rows int) stmtKey { return stmtKey{kind: "warm.summaries", rows: rows} }

// warmKeys are every statement of the warm writer: each kind, each multi-row size
// (warmInsertSizes).
func warmKeys() []stmtKey {
	keys := append([]stmtKey{stmtWarmReplace, stmtWarmEvent, stmtWarmEventAgain}, patternKeys...)
	for _, n := range warmInsertSizes {
		keys = append(keys, stmtWarmSummaries(n))
	}
	return keys
}

// warmSQL returns the SQL of the warm writer's statement k.
func warmSQL(k stmtKey) string {
	switch k.kind {
	case "warm.summaries":
		// A summary stored already is left as it is (insertSpans replaces it). OR IGNORE rather
		// than ON CONFLICT DO NOTHING, as the hot writer's spans (writerSQL): no constraint can then
		// abort the statement half way, so SQLite keeps no statement journal (a copy of every
		// existing page the statement changes: the unique index's leaves) for it. No value is ever
		// NULL; a row that broke NOT NULL would be skipped and fail its replacement (INSERT OR
		// REPLACE does not skip it).
		// https://www.sqlite.org/lang_conflict.html, https://www.sqlite.org/tempfiles.html#stmtjrnl
		return valuesSQL(`INSERT OR IGNORE INTO span_summaries `+summaryColumnList+` VALUES`, summaryPlaceholders, k.rows, "")
	case "warm.replace":
		return `INSERT OR REPLACE INTO span_summaries ` + summaryColumns
	case "warm.event":
		// An event already stored has the same content (its id is the content's hash): a retry
		// only moves its retention clock (warm.event-again).
		return `INSERT OR IGNORE INTO key_events (event_id, trace_id, span_id, session_id, time_unix_nano, kind, name,
		  severity_number, service_name, message, attributes, ingested_unix_nano) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`
	case "warm.event-again":
		return `UPDATE key_events SET ingested_unix_nano = ? WHERE event_id = ?`
	}
	if q, ok := patternSQL(k, warmWholeQuery); ok {
		return q
	}
	panic("sqlitestore: unknown warm writer statement " + k.kind)
}

// insertSpans inserts spans with the INSERTs of sizes rows (warmInsertSizes, or only its 1 for
// the row-by-row write) and records each row in batch. A statement that inserts fewer rows than
// it carries met summaries already stored (a retry, or the same span twice in the batch):
// settleChunk replaces those in the same transaction. It returns errAlreadyStored when it cannot
// tell them apart (write then writes the batch row by row).
func (w *WarmDB) insertSpans(ctx context.Context, tx *sql.Tx, sizes []int, spans []store.SpanSummary, now int64, batch *RunBatch) error {
	args := make([]any, 0, summaryArgs*min(len(spans), warmInsertRows))
	var attrs [warmInsertRows][]byte // each row's encoded attributes, reused by the next statement
	var replace *sql.Stmt            // bound for the first chunk with a stored summary
	defer func() {
		if replace != nil {
			replace.Close()
		}
	}()
	for _, n := range sizes {
		for len(spans) >= n {
			chunk := spans[:n]
			spans = spans[n:]
			args = args[:0]
			for i := range chunk {
				var stored any
				stored, attrs[i] = encodeAttrs(attrs[i], &chunk[i])
				args = appendSummaryArgs(args, &chunk[i], stored, now)
			}
			st, err := w.stmts.stmt(ctx, tx, stmtWarmSummaries(n))
			if err != nil {
				return err
			}
			res, err := st.ExecContext(ctx, args...)
			st.Close()
			if err != nil {
				return fmt.Errorf("sqlite warm tier: insert spans %s..%s: %w", chunk[0].SpanID, chunk[n-1].SpanID, err)
			}
			got, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if got == int64(n) {
				for i := range chunk {
					batch.Inserted(w.spanFacts(&chunk[i]))
				}
				continue
			}
			if w.noSettle && n > 1 {
				return errAlreadyStored
			}
			if replace == nil {
				if replace, err = w.stmts.stmt(ctx, tx, stmtWarmReplace); err != nil {
					return err
				}
			}
			if err := w.settleChunk(ctx, tx, replace, res, got, chunk, args, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleChunk completes a multi-row INSERT of chunk (its parameters args, summaryArgs a row)
// that inserted only got of its rows: OR IGNORE left the others, summaries already
// stored, as they were. The rows it inserted are the got rows with the largest rowids, up to
// res's LastInsertId: SQLite gives a new row the largest rowid plus one
// (https://www.sqlite.org/autoinc.html), so one statement's rows are consecutive. They are read
// back by rowid and checked to be the chunk's; each row of the chunk is then, in order, either
// one of them (Inserted) or replaced as the row-by-row write does (INSERT OR REPLACE, Replaced):
// a summary stored before, or a later copy of a span in the batch. The chunk is written once,
// not the whole batch again. It returns errAlreadyStored when the rows read back are not the
// chunk's (rowids not consecutive: write falls back to writing the batch row by row).
func (w *WarmDB) settleChunk(ctx context.Context, tx *sql.Tx, replace *sql.Stmt, res sql.Result, got int64,
	chunk []store.SpanSummary, args []any, batch *RunBatch,
) error {
	inserted, err := insertedRows(ctx, tx, "span_summaries", res, got)
	if err != nil {
		return fmt.Errorf("sqlite warm tier: %w", err)
	}
	if int64(len(inserted)) != got {
		return errAlreadyStored
	}
	if got > 0 {
		in := map[[2]string]bool{}
		for i := range chunk {
			in[[2]string{chunk[i].TraceID, chunk[i].SpanID}] = true
		}
		for k := range inserted {
			if !in[k] {
				return errAlreadyStored
			}
		}
	}
	for i := range chunk {
		s := &chunk[i]
		k := [2]string{s.TraceID, s.SpanID}
		if inserted[k] {
			delete(inserted, k) // a later copy of the span in the chunk is replaced
			batch.Inserted(w.spanFacts(s))
			continue
		}
		if _, err := replace.ExecContext(ctx, args[i*summaryArgs:(i+1)*summaryArgs]...); err != nil {
			return fmt.Errorf("sqlite warm tier: replace span %s: %w", s.SpanID, err)
		}
		batch.Replaced(s.TraceID)
		batch.Exchange(w.spanFacts(s))
	}
	return nil
}

// appendSummaryArgs appends the parameters of s's row (summaryColumnList order); integers as
// int64, which database/sql passes on without reflection.
func appendSummaryArgs(args []any, s *store.SpanSummary, attrs any, now int64) []any {
	return append(args, s.TraceID, s.SpanID, s.ParentSpanID, s.SessionID, s.Name, int64(s.Kind), s.Start, s.End,
		int64(s.StatusCode), s.StatusMessage, s.Service, s.GenAIKind, s.Model, s.InputTokens, s.OutputTokens, s.CostUSD,
		int64(s.Unpriced), s.ToolName, s.AgentName, s.ErrorType, attrs, now)
}

// spanFacts is what s's row contributes to its run's index row.
func (w *WarmDB) spanFacts(s *store.SpanSummary) SpanFacts {
	errored := s.StatusCode == int32(ptrace.StatusCodeError)
	return SpanFacts{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
		SessionID: s.SessionID, Service: s.Service, Agent: s.AgentName, Model: s.Model, Start: s.Start, End: s.End,
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, Error: errored,
		CostUSD: s.CostUSD, Unpriced: s.Unpriced != 0, Exchange: s.Exchange, Edited: s.Edited,
		LLM: s.GenAIKind == string(genai.KindLLM) && !s.Exchange,
		// With NoSignatures nothing is marked, so the attributes are not read for a signal.
		Signal: errored || !w.noPatterns && (s.Signal == store.SignalYes ||
			s.Signal == store.SignalUnknown && patterns.SummarySignal(s.Attributes))}
}

// writeTx is one write transaction of write: spans with the multi-row INSERTs (multi) or one row
// a statement, telling a stored row from a new one; all statements from the file's stmtCache.
func (w *WarmDB) writeTx(ctx context.Context, spans []store.SpanSummary, events []store.KeyEvent, multi bool) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	now := w.now().UnixNano()
	batch := RunBatch{Ingested: now}
	if len(spans) > 0 {
		sizes := warmInsertSizes[:]
		if !multi {
			sizes = sizes[len(sizes)-1:] // one row a statement
		}
		if err := w.insertSpans(ctx, tx, sizes, spans, now, &batch); err != nil {
			return err
		}
	}
	if len(events) > 0 {
		stmt, err := w.stmts.stmt(ctx, tx, stmtWarmEvent)
		if err != nil {
			return err
		}
		defer stmt.Close()
		again, err := w.stmts.stmt(ctx, tx, stmtWarmEventAgain)
		if err != nil {
			return err
		}
		defer again.Close()
		for _, e := range events {
			res, err := stmt.ExecContext(ctx, e.EventID, e.TraceID, e.SpanID, e.SessionID, e.Time, e.Kind, e.Name,
				e.Severity, e.Service, e.Message, e.Attributes, now)
			if err != nil {
				return fmt.Errorf("sqlite warm tier: insert key event: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				if _, err := again.ExecContext(ctx, now, e.EventID); err != nil {
					return fmt.Errorf("sqlite warm tier: insert key event: %w", err)
				}
			} else if e.Kind == "alert" {
				batch.Alert(e.TraceID)
			}
		}
	}
	if err := warmIndex.addExchanges(ctx, tx, &batch); err != nil {
		return err
	}
	if w.recomputeIndex {
		err = warmIndex.rebuild(ctx, tx, batch.traces(), false)
	} else {
		err = warmIndex.apply(ctx, tx, &batch)
	}
	if err != nil {
		return fmt.Errorf("sqlite warm tier: %w", err)
	}
	var marked, variants []string
	if !w.noPatterns {
		whole := func(ids []string) map[string]wholeRun { return warmWholeRuns(spans, events, ids) }
		if marked, variants, err = indexPatterns(ctx, tx, &w.stmts, w.variants, w.keys(), w.memo, &batch, whole); err != nil {
			return fmt.Errorf("sqlite warm tier: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	w.variants.add(variants)
	// The runs not signed in the transaction are read back; a failure leaves them marked, and
	// readers compute them (patternindex.go).
	w.signs.add(ctx, marked)
	return nil
}

// fingerprint is the patterns.Fingerprint of run traceID's stored summaries, as warmWholeRuns
// computes it from a batch: zero when the run has a key event other than an exception (an alert
// or a divergence, which the fingerprint does not cover). signRuns looks the memo up by it before
// reading the run back.
func (w *WarmDB) fingerprint(ctx context.Context, traceID string) (patterns.Fingerprint, error) {
	var f patterns.Fingerprint
	rows, err := w.db.QueryContext(ctx, `SELECT span_id, name, start_time_unix_nano, end_time_unix_nano, status_code, status_message
	  FROM span_summaries WHERE trace_id = ?1
	    AND NOT EXISTS (SELECT 1 FROM key_events WHERE trace_id = ?1 AND kind != 'exception')`, traceID)
	if err != nil {
		return f, err
	}
	defer rows.Close()
	for rows.Next() {
		var s store.SpanSummary
		if err := rows.Scan(&s.SpanID, &s.Name, &s.Start, &s.End, &s.StatusCode, &s.StatusMessage); err != nil {
			return patterns.Fingerprint{}, err
		}
		f.AddSummary(&s)
	}
	return f, rows.Err()
}

// warmWholeQuery selects the stored summaries and key events of the runs of a JSON array
// (signWhole).
const warmWholeQuery = `SELECT r.trace_id, r.spans, (SELECT count(*) FROM key_events e WHERE e.trace_id = r.trace_id)
  FROM ` + RunsTable + ` r WHERE r.trace_id IN (SELECT value FROM json_each(?))`

// warmWholeRuns are the marked runs of a warm batch with their records, each built as Run
// rebuilds it from the same rows (store.WarmRun): signWhole signs those the batch holds whole,
// the warm writer's share of signing at ingest (BENCHMARKS.md, "Failure patterns").
func warmWholeRuns(spans []store.SpanSummary, events []store.KeyEvent, marked []string) map[string]wholeRun {
	if len(marked) == 0 {
		return nil
	}
	out := map[string]wholeRun{}
	for id, b := range warmBatchRuns(spans, events, marked) {
		r := wholeRun{n: len(b.spans), events: len(b.events), view: func(ctx context.Context, opts runview.Options) (*runview.View, error) {
			b.sort()
			run, err := store.WarmRun(id, b.spans, b.events)
			if err != nil {
				return nil, err
			}
			return runview.Build(ctx, run, opts)
		}}
		// A key event other than a span's exception (an alert, a divergence) comes from a log
		// record, which the hot writer's batch path never signs with: no fingerprint, no memo.
		if !slices.ContainsFunc(b.events, func(e store.KeyEvent) bool { return e.Kind != "exception" }) {
			for i := range b.spans {
				r.fp.AddSummary(&b.spans[i])
			}
		}
		out[id] = r
	}
	return out
}

// warmBatch is one run's records in a warm batch, as Run reads them back: a span id or event id
// once (its last copy, which the write kept); once sorted (sort), spans by start time then span id,
// events by time then event id.
type warmBatch struct {
	spans  []store.SpanSummary
	events []store.KeyEvent
}

// warmBatchRuns collects the records of the runs ids from a batch, unsorted (warmBatch.sort).
func warmBatchRuns(spans []store.SpanSummary, events []store.KeyEvent, ids []string) map[string]*warmBatch {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	spanAt := map[[2]string]int{}
	eventAt := map[string]int{}
	out := map[string]*warmBatch{}
	get := func(id string) *warmBatch {
		b := out[id]
		if b == nil {
			b = &warmBatch{}
			out[id] = b
		}
		return b
	}
	for _, s := range spans {
		if !want[s.TraceID] {
			continue
		}
		b := get(s.TraceID)
		k := [2]string{s.TraceID, s.SpanID}
		if i, ok := spanAt[k]; ok {
			b.spans[i] = s
			continue
		}
		spanAt[k] = len(b.spans)
		b.spans = append(b.spans, s)
	}
	for _, e := range events {
		if !want[e.TraceID] {
			continue
		}
		b := get(e.TraceID)
		if i, ok := eventAt[e.EventID]; ok {
			b.events[i] = e
			continue
		}
		eventAt[e.EventID] = len(b.events)
		b.events = append(b.events, e)
	}
	return out
}

// sort puts b's records in the order Run reads them back (the warmBatch comment). Only a run
// signed from the batch needs it, not one the memo holds.
func (b *warmBatch) sort() {
	sort.Slice(b.spans, func(i, j int) bool {
		if b.spans[i].Start != b.spans[j].Start {
			return b.spans[i].Start < b.spans[j].Start
		}
		return b.spans[i].SpanID < b.spans[j].SpanID
	})
	sort.Slice(b.events, func(i, j int) bool {
		if b.events[i].Time != b.events[j].Time {
			return b.events[i].Time < b.events[j].Time
		}
		return b.events[i].EventID < b.events[j].EventID
	})
}

func (w *WarmDB) keys() []string { return w.sessionKeys }

// Runs implements store.Reader (Tier "warm"): from the run index, or, for a version 1 file opened
// read-only, by aggregating span_summaries.
func (w *WarmDB) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	if w.version >= 2 {
		return indexedRuns(ctx, runsQueryer(w.db, w.flags), f, store.RunOrder{}, store.TierWarm, w.ranks)
	}
	return listRuns(ctx, w.db, f, "span_summaries", "SUM(cost_usd), SUM(unpriced)", store.TierWarm)
}

// FiltersRunIndex implements store.RunIndexFilterer (DB.FiltersRunIndex).
func (w *WarmDB) FiltersRunIndex() bool { return w.version >= 2 && w.flags }

// RankedRuns implements store.RankedRunLister (DB.RankedRuns) for the warm file.
func (w *WarmDB) RankedRuns(ctx context.Context, f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
	if w.version < 2 {
		return nil, fmt.Errorf("sqlite warm tier: schema version %d has no run index: %w", w.version, errors.ErrUnsupported)
	}
	return indexedRuns(ctx, runsQueryer(w.db, w.flags), f, o, store.TierWarm, w.ranks)
}

// Run implements store.Reader: the run rebuilt from its summaries and key events (Tier "warm").
func (w *WarmDB) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	rows, err := w.db.QueryContext(ctx, `SELECT trace_id, span_id, parent_span_id, session_id, name, kind,
	  start_time_unix_nano, end_time_unix_nano, status_code, status_message, service_name, genai_kind, model,
	  input_tokens, output_tokens, cost_usd, unpriced, tool_name, agent_name, error_type, attributes
	  FROM span_summaries WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id`, traceID)
	if err != nil {
		return nil, fmt.Errorf("sqlite warm tier: read run %s: %w", traceID, err)
	}
	spans, err := store.ScanSpanSummaries(rows, decodeAttrs)
	if err != nil {
		return nil, fmt.Errorf("sqlite warm tier: read run %s: %w", traceID, err)
	}
	erows, err := w.db.QueryContext(ctx, `SELECT event_id, trace_id, span_id, session_id, time_unix_nano, kind, name,
	  severity_number, service_name, message, attributes FROM key_events WHERE trace_id = ? ORDER BY time_unix_nano, event_id`, traceID)
	if err != nil {
		return nil, fmt.Errorf("sqlite warm tier: read events of %s: %w", traceID, err)
	}
	events, err := store.ScanKeyEvents(erows)
	if err != nil {
		return nil, fmt.Errorf("sqlite warm tier: read events of %s: %w", traceID, err)
	}
	return store.WarmRun(traceID, spans, events)
}

var _ store.Reader = (*WarmDB)(nil)

// DivergedRuns implements store.DivergedRunLister: none, the warm file keeps no divergence
// record (its key events are alerts and exceptions).
func (w *WarmDB) DivergedRuns(context.Context) ([]string, error) { return nil, nil }

// TraceIDsWithPrefix implements store.TraceIDPrefixLister from the run index (a version 1 file:
// from span_summaries).
func (w *WarmDB) TraceIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	if w.version >= 2 {
		return idsWithPrefix(ctx, w.db, RunsTable, prefix, limit)
	}
	return idsWithPrefix(ctx, w.db, "span_summaries", prefix, limit)
}
