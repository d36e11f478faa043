// SPDX-License-Identifier: Apache-2.0

// Package sqlitestore is the embedded hot tier: one SQLite file (modernc.org/sqlite, no cgo)
// holding every span and log record completely.
//
// # Schema (a contract for the CLI and any other reader; version 8)
//
//	spans: one row per span, unique on (trace_id, span_id)
//	  trace_id              TEXT     32 lowercase hex characters
//	  span_id               TEXT     16 lowercase hex characters
//	  parent_span_id        TEXT     16 hex, '' for a root span
//	  session_id            TEXT     first of gen_ai.conversation.id, session.id on the span, then
//	                                 its resource; '' when none (the run is its own session)
//	  name                  TEXT
//	  kind                  INTEGER  OTLP SpanKind (0 unspecified .. 5 consumer)
//	  start_time_unix_nano  INTEGER
//	  end_time_unix_nano    INTEGER
//	  status_code           INTEGER  OTLP StatusCode (0 unset, 1 ok, 2 error)
//	  service_name          TEXT     resource service.name
//	  genai_kind            TEXT     llm | tool | agent | other (internal/genai.Classify)
//	  model                 TEXT     gen_ai.response.model, else gen_ai.request.model; '' if none
//	  input_tokens          INTEGER  gen_ai.usage.input_tokens (0 if absent)
//	  output_tokens         INTEGER  gen_ai.usage.output_tokens (0 if absent)
//	  cost_usd              REAL     USD of the LLM call (pricing.Prices.SpanCost: the embedded
//	                                 genai-prices table with the configured overrides), priced
//	                                 once when written; 0 without usage or price (version 2)
//	  unpriced              INTEGER  1: an LLM call with usage whose model has no known price
//	                                 (version 2)
//	  otlp                  BLOB     the span in OTLP protobuf: an ExportTraceServiceRequest
//	                                 holding exactly this span with its resource and scope. It is
//	                                 the complete record: attributes with their types, events,
//	                                 links, status, trace state, flags, dropped counts, bytes as
//	                                 received (invalid UTF-8 included). Encoded as otlp_codec says
//	                                 (version 4: zstd, with the dictionary otlp_dict; codec.go;
//	                                 version 7: otlp_codec 3, a slice of a span_frames row, frames.go)
//	  ingested_unix_nano    INTEGER  when the row was written (retention clock)
//	  otlp_codec, otlp_dict INTEGER  how otlp is encoded (version 4; codec.go)
//
//	logs: one row per log record, unique on record_sha256
//	  record_sha256         TEXT     SHA-256 of the protobuf (at-least-once retries collapse to one row)
//	  trace_id, span_id     TEXT     hex, '' when the record has none
//	  session_id            TEXT     as for spans
//	  time_unix_nano        INTEGER  time, else observed time
//	  severity_number       INTEGER
//	  event_name            TEXT     LogRecord.EventName (agent_guard alerts: runagain.alert)
//	  service_name          TEXT
//	  otlp                  BLOB     ExportLogsServiceRequest with exactly this record, encoded
//	                                 as otlp_codec says (as for spans)
//	  ingested_unix_nano    INTEGER
//	  otlp_codec, otlp_dict INTEGER  as for spans (version 4)
//
//	indexes: UNIQUE (trace_id, span_id), spans_ingested (ingested_unix_nano); version 8 dropped
//	spans_session: a session's runs are found through runs (runs_session) and run_sessions
//
//	zstd_dicts (codec.go), span_frames (frames.go), runs, span_orphans and run_sessions
//	(runindex.go), payload_refs, payload_prefixes and the payload_ref_uris view (refs.go)
//
// The database runs in WAL mode, so the CLI reads while the collector writes. Writes are
// idempotent: a batch retried after a crash or timeout replaces rows with identical content
// (a span stored again replaces its row; the run index counts it once).
package sqlitestore

// SchemaVersion is the version recorded in PRAGMA user_version. Version 2 added cost_usd and
// unpriced to spans; a version 1 file is migrated when opened for writing (the columns are added,
// existing rows keep 0) and read as is (cost 0) when opened read-only.
//
// Version 3 added the run index (RunsTable, see runindex.go): a version 2 file opened for writing
// builds it from its span rows once (one aggregate over every span); opened read-only it is listed
// by aggregating its span rows, as version 2 builds did.
//
// Version 4 stores the otlp columns of spans and logs compressed (codec.go: otlp_codec,
// otlp_dict, the zstd_dicts table). A version 3 file opened for writing gains the columns (its
// rows keep otlp_codec 0, the protobuf as it is: nothing is rewritten) and read-only it is read
// as it is.
//
// Version 5 maintains the run index incrementally (runindex.go: the span_orphans table, built
// from the span rows by the migration) and drops two indexes no query uses since the run index:
// spans_start and payload_refs_uri (the payload sweep's one listing of distinct URIs sorts them).
// Read-only, a version 4 file is read as it is.
//
// Version 6 stores payload references split into a shared prefix and a name (refs.go:
// payload_prefixes, the payload_ref_uris view); the payload_refs table of an older file is
// converted from its rows when the file is opened for writing, read as it is read-only.
//
// Version 7 compresses the spans of one trace in one request together (frames.go: span_frames,
// otlp_codec 3); rows written before it stay as they are and read as before. A version 6 file
// opened for writing gains the table; read-only it is read as it is.
//
// Version 8 drops the spans_session index (one more randomly keyed B-tree leaf written per run
// in every commit: 7-12 % of the hot write's CPU) and finds a session's runs through the run
// index instead: runs.session_id (runs_session), and run_sessions for the other sessions a run's
// spans name (runindex.go). A version 7 file opened for writing drops the index and fills
// run_sessions from its span rows (one transaction); read-only it is read as it is (its
// sessions found through spans_session).
//
// Version 9 counts each run's replay divergence records in the run index (runs.divergences, kept
// as alerts is) and indexes the runs with an alert or a divergence in start order (runs_flagged),
// so the sessions page's alerts filter reads only those runs (store.RunFilter.Flagged). A file of
// an older version opened for writing gains the column, counted from its log records in one
// transaction (ensureFlags); read-only it is read as it is (no divergence counted, and its
// listings filter in Go: DB.FiltersRunIndex).
//
// The logs_event index (event_name, trace_id) lists the runs with a record of one event (the
// replay divergences, DB.DivergedRuns) without a scan; it is part of the schema (ddl), so a file
// of any version gains it when opened for writing, and read-only without it the same query
// scans the logs table. So are the run index's sort indexes (runs_cost, runs_duration,
// runs_tokens, runs_errors: runindex.go), in the hot and the warm file: read-only without them a
// ranked listing sorts the runs of its range.
const SchemaVersion = 9

const ddl = dictsDDL + `
CREATE TABLE IF NOT EXISTS spans (
  trace_id             TEXT    NOT NULL,
  span_id              TEXT    NOT NULL,
  parent_span_id       TEXT    NOT NULL,
  session_id           TEXT    NOT NULL,
  name                 TEXT    NOT NULL,
  kind                 INTEGER NOT NULL,
  start_time_unix_nano INTEGER NOT NULL,
  end_time_unix_nano   INTEGER NOT NULL,
  status_code          INTEGER NOT NULL,
  service_name         TEXT    NOT NULL,
  genai_kind           TEXT    NOT NULL,
  model                TEXT    NOT NULL,
  input_tokens         INTEGER NOT NULL,
  output_tokens        INTEGER NOT NULL,
  otlp                 BLOB    NOT NULL,
  ingested_unix_nano   INTEGER NOT NULL,
  cost_usd             REAL    NOT NULL DEFAULT 0,
  unpriced             INTEGER NOT NULL DEFAULT 0,
  otlp_codec           INTEGER NOT NULL DEFAULT 0,
  otlp_dict            INTEGER NOT NULL DEFAULT 0,
  UNIQUE (trace_id, span_id)
);
CREATE INDEX IF NOT EXISTS spans_ingested ON spans (ingested_unix_nano);
CREATE TABLE IF NOT EXISTS logs (
  record_sha256        TEXT    NOT NULL PRIMARY KEY,
  trace_id             TEXT    NOT NULL,
  span_id              TEXT    NOT NULL,
  session_id           TEXT    NOT NULL,
  time_unix_nano       INTEGER NOT NULL,
  severity_number      INTEGER NOT NULL,
  event_name           TEXT    NOT NULL,
  service_name         TEXT    NOT NULL,
  otlp                 BLOB    NOT NULL,
  ingested_unix_nano   INTEGER NOT NULL,
  otlp_codec           INTEGER NOT NULL DEFAULT 0,
  otlp_dict            INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS logs_trace ON logs (trace_id);
CREATE INDEX IF NOT EXISTS logs_ingested ON logs (ingested_unix_nano);
CREATE INDEX IF NOT EXISTS logs_event ON logs (event_name, trace_id);
` + framesDDL

// migrations bring an older hot file up to SchemaVersion (openFile).
var migrations = map[int]string{
	1: `ALTER TABLE spans ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE spans ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;`,
	2: hotIndex.buildSQL(),
	// One transaction, so that an interrupted migration leaves the file at version 3.
	3: `BEGIN;
ALTER TABLE spans ADD COLUMN otlp_codec INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spans ADD COLUMN otlp_dict INTEGER NOT NULL DEFAULT 0;
ALTER TABLE logs ADD COLUMN otlp_codec INTEGER NOT NULL DEFAULT 0;
ALTER TABLE logs ADD COLUMN otlp_dict INTEGER NOT NULL DEFAULT 0;` + dictsDDL + `PRAGMA user_version = 4;
COMMIT;`,
	4: `BEGIN;` + hotIndex.buildOrphansSQL() + `
DROP INDEX IF EXISTS spans_start;
DROP INDEX IF EXISTS payload_refs_uri;
PRAGMA user_version = 5;
COMMIT;`,
	5: `SELECT 1;`, // payload_refs is converted by ensurePayloadRefs, which checks its shape
	6: `SELECT 1;`, // span_frames and its trigger are created by the schema (ddl)
	7: `BEGIN;
DROP INDEX IF EXISTS spans_session;` + hotIndex.sessionsDDL() + hotIndex.fillSessions("1") + `;
PRAGMA user_version = 8;
COMMIT;`,
	8: `SELECT 1;`, // the runs table's divergences column: ensureFlags, which checks for it
}
