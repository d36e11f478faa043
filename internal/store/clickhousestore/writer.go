// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
)

// OpenDB opens a database/sql handle on a ClickHouse endpoint (clickhouse-go DSN: tcp:// or
// clickhouse:// for the native protocol, http:// or https:// for HTTP), with username and
// password when set, and extra DSN parameters.
func OpenDB(endpoint, username, password string, params map[string]string) (*sql.DB, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("clickhouse endpoint %q: want a URL such as tcp://127.0.0.1:9000 or http://127.0.0.1:8123", endpoint)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	if u.Scheme == "https" {
		q.Set("secure", "true")
	}
	if username != "" {
		u.User = url.UserPassword(username, password)
	}
	u.RawQuery = q.Encode()
	opts, err := clickhouse.ParseDSN(u.String())
	if err != nil {
		return nil, fmt.Errorf("clickhouse endpoint %q: %w", endpoint, err)
	}
	return clickhouse.OpenDB(opts), nil
}

// Writer writes the warm and cold tiers.
type Writer struct {
	DB          *sql.DB
	Schema      Schema
	SessionKeys []string         // default genai.DefaultSessionKeys
	Now         func() time.Time // ingestion clock; default time.Now
	Prices      *pricing.Prices  // prices each LLM call; default the embedded table
	// Join applies the counting rule to the cold partials across batches (nil: within each).
	Join *rule.Window
	// NoSignatures turns off computing failure signatures when warm batches are written
	// (patternindex.go); readers then sign each failing run when they list patterns.
	NoSignatures bool
}

func (w *Writer) now() int64 {
	if w.Now == nil {
		return time.Now().UnixNano()
	}
	return w.Now().UnixNano()
}

func (w *Writer) keys() []string {
	if w.SessionKeys == nil {
		return genai.DefaultSessionKeys
	}
	return w.SessionKeys
}

// CreateWarm creates the database, the warm tables, the run index (runagain_runs and its
// view), filling the index from the stored summaries when it did not exist, and the failure
// signature tables (patternindex.go; runs stored before them are signed by readers).
func (w *Writer) CreateWarm(ctx context.Context) error {
	if err := w.exec(ctx, append([]string{w.Schema.DatabaseDDL()}, w.Schema.WarmDDL()...)); err != nil {
		return err
	}
	if err := w.createRuns(ctx); err != nil {
		return err
	}
	return w.exec(ctx, w.Schema.PatternsDDL())
}

// CreateCold creates the database and the cold table.
func (w *Writer) CreateCold(ctx context.Context) error {
	return w.exec(ctx, append([]string{w.Schema.DatabaseDDL()}, w.Schema.ColdDDL()...))
}

func (w *Writer) exec(ctx context.Context, stmts []string) error {
	for _, s := range stmts {
		if _, err := w.DB.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("clickhouse: %s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i]
	}
	return s
}

// WriteWarmTraces appends the summaries and exception events of td.
func (w *Writer) WriteWarmTraces(ctx context.Context, td ptrace.Traces) error {
	spans, events := store.Summarize(td, w.keys(), w.Prices)
	if err := w.insertSpans(ctx, spans); err != nil {
		return err
	}
	if err := w.insertEvents(ctx, events); err != nil {
		return err
	}
	return w.signWarm(ctx, spans, events)
}

// WarmRecords is what WriteWarmTraces and WriteWarmLogs store of td and ld (either may be
// empty), built without writing (the tiered exporter persists it in the warm tier's queue).
func (w *Writer) WarmRecords(td ptrace.Traces, ld plog.Logs) store.Records {
	var r store.Records
	if td != (ptrace.Traces{}) {
		r.Spans, r.Events = store.Summarize(td, w.keys(), w.Prices)
	}
	if ld != (plog.Logs{}) {
		r.Events = append(r.Events, store.AlertEvents(ld, w.keys())...)
	}
	return r
}

// WriteWarmRecords appends the span summaries and key events of r, then signs the failing runs
// among them (patternindex.go).
func (w *Writer) WriteWarmRecords(ctx context.Context, r store.Records) error {
	if err := w.insertSpans(ctx, r.Spans); err != nil {
		return err
	}
	if err := w.insertEvents(ctx, r.Events); err != nil {
		return err
	}
	return w.signWarm(ctx, r.Spans, r.Events)
}

// ColdRecords is what WriteCold stores of td and ld: their session partials.
func (w *Writer) ColdRecords(td ptrace.Traces, ld plog.Logs) store.Records {
	return store.Records{Partials: store.JoinedPartials(td, ld, w.keys(), w.now(), w.Prices, w.Join)}
}

// WriteColdRecords inserts the partials of r with one insert per batch they come from (a
// sending queue may have merged several requests), each with its own batch id as the insert's
// deduplication token: a request sent again after a crash, merged this time with other
// requests, is dropped by the server and counts once (insertPartials).
func (w *Writer) WriteColdRecords(ctx context.Context, r store.Records) error {
	return w.insertPartials(ctx, r.Partials)
}

// WriteWarmLogs appends the alert records of ld as key events, then signs their runs.
func (w *Writer) WriteWarmLogs(ctx context.Context, ld plog.Logs) error {
	events := store.AlertEvents(ld, w.keys())
	if err := w.insertEvents(ctx, events); err != nil {
		return err
	}
	return w.signWarm(ctx, nil, events)
}

// SpanColumns is the insert column list of runagain_span_summaries.
const SpanColumns = `trace_id, span_id, parent_span_id, session_id, name, kind, start_time_unix_nano, end_time_unix_nano,
 status_code, status_message, service_name, genai_kind, model, input_tokens, output_tokens, cost_usd, unpriced, tool_name,
 agent_name, error_type, attributes, ingested_unix_nano`

// EventColumns is the insert column list of runagain_key_events.
const EventColumns = `event_id, trace_id, span_id, session_id, time_unix_nano, kind, name, severity_number,
 service_name, message, attributes, ingested_unix_nano`

// SessionColumns is the insert column list of runagain_sessions.
const SessionColumns = `session_id, first_seen_unix_nano, last_seen_unix_nano, agent, service, models, trace_ids,
 spans, input_tokens, output_tokens, cost_usd, unpriced, errors, alerts, partials, ingested_unix_nano`

func (w *Writer) insertSpans(ctx context.Context, spans []store.SpanSummary) error {
	now := w.now()
	rows := make([][]any, len(spans))
	for i, s := range spans {
		rows[i] = []any{s.TraceID, s.SpanID, s.ParentSpanID, s.SessionID, s.Name, s.Kind, s.Start, s.End, s.StatusCode,
			s.StatusMessage, s.Service, s.GenAIKind, s.Model, s.InputTokens, s.OutputTokens, s.CostUSD, s.Unpriced, s.ToolName,
			s.AgentName, s.ErrorType, s.Attributes, now}
	}
	return w.insert(ctx, TableSpanSummaries, SpanColumns, rows)
}

func (w *Writer) insertEvents(ctx context.Context, events []store.KeyEvent) error {
	now := w.now()
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{e.EventID, e.TraceID, e.SpanID, e.SessionID, e.Time, e.Kind, e.Name, e.Severity, e.Service,
			e.Message, e.Attributes, now}
	}
	return w.insert(ctx, TableKeyEvents, EventColumns, rows)
}

// WriteCold inserts the session partials of one batch (td and/or ld) as one insert whose
// deduplication token is the batch id.
func (w *Writer) WriteCold(ctx context.Context, td ptrace.Traces, ld plog.Logs) error {
	return w.insertPartials(ctx, store.JoinedPartials(td, ld, w.keys(), w.now(), w.Prices, w.Join))
}

// insertPartials inserts ps with one insert per batch id (in batch id order), each with its
// batch id as the insert's deduplication token, so the server drops a batch it already has
// whatever other batches it arrives with; a partial repeated with the same (session, batch) in
// ps is inserted once. Each row is stamped with its partial's Ingested (the ingestion clock when
// its records were built, before the cold queue), or with the clock now when it has none; the
// cold TTL counts from it. Its partials column is 1: each row is one partial record (one batch
// of its session, as the Parquet backend stores and store.MergePartials counts them), and the
// reader sums the column. A failed insert returns its error; the batches before it are stored,
// and a retry of ps drops them by their tokens.
func (w *Writer) insertPartials(ctx context.Context, ps []store.SessionPartial) error {
	if len(ps) == 0 {
		return nil
	}
	now := w.now()
	byBatch := map[string][][]any{}
	seen := map[[2]string]bool{}
	for _, p := range ps {
		k := [2]string{p.SessionID, p.BatchID}
		if seen[k] {
			continue
		}
		seen[k] = true
		ingested := p.Ingested
		if ingested == 0 {
			ingested = now
		}
		byBatch[p.BatchID] = append(byBatch[p.BatchID], []any{p.SessionID, p.FirstSeen, p.LastSeen, p.Agent, p.Service,
			p.Models, p.TraceIDs, p.Spans, p.InputTokens, p.OutputTokens, p.CostUSD, p.Unpriced, p.Errors, p.Alerts,
			int64(1), ingested})
	}
	batches := make([]string, 0, len(byBatch))
	for id := range byBatch {
		batches = append(batches, id)
	}
	sort.Strings(batches)
	for i, id := range batches {
		bctx := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_deduplication_token": id}))
		if err := w.insert(bctx, TableSessions, SessionColumns, byBatch[id]); err != nil {
			return fmt.Errorf("batch %s, after %d of %d batches stored (a retry drops them by their tokens): %w", id, i, len(batches), err)
		}
	}
	return nil
}

func (w *Writer) insert(ctx context.Context, table, columns string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	tx, err := w.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("clickhouse: insert into %s: %w", table, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	stmt, err := tx.PrepareContext(ctx, fmt.Sprintf("INSERT INTO %s (%s)", w.Schema.Table(table), columns))
	if err != nil {
		return fmt.Errorf("clickhouse: insert into %s: %w", table, err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return fmt.Errorf("clickhouse: insert into %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("clickhouse: insert into %s: %w", table, err)
	}
	return nil
}
