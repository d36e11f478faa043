// SPDX-License-Identifier: Apache-2.0

package store

import (
	"fmt"
	"time"
)

// What every warm-tier reader (SQLite, ClickHouse) shares once its queries returned rows: the
// scan of span summaries and key events, the run rebuilt from them, and the cold tier's session
// page (one row per session, filtered and limited).

// Rows is what the scans need of a query result (*sql.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// AttrDecoder turns a stored attributes column into the JSON object text of
// SpanSummary.Attributes; s holds the row's other columns (a backend that stores the JSON as is
// passes nil).
type AttrDecoder func(s *SpanSummary, stored []byte) (string, error)

// ScanSpanSummaries reads every row of rows and closes it. The columns are, in order: trace_id,
// span_id, parent_span_id, session_id, name, kind, start_time_unix_nano, end_time_unix_nano,
// status_code, status_message, service_name, genai_kind, model, input_tokens, output_tokens,
// cost_usd, unpriced, tool_name, agent_name, error_type, attributes (the SpanSummary fields in
// declaration order). attributes is read as the driver returns it (bytes or string) and decoded by decode (nil: it
// is the JSON text).
func ScanSpanSummaries(rows Rows, decode AttrDecoder) ([]SpanSummary, error) {
	defer rows.Close()
	var out []SpanSummary
	for rows.Next() {
		var attrs any // the driver's value: []byte (SQLite BLOB, TEXT) or string (ClickHouse String)
		var s SpanSummary
		if err := rows.Scan(&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.SessionID, &s.Name, &s.Kind, &s.Start, &s.End,
			&s.StatusCode, &s.StatusMessage, &s.Service, &s.GenAIKind, &s.Model, &s.InputTokens, &s.OutputTokens,
			&s.CostUSD, &s.Unpriced, &s.ToolName, &s.AgentName, &s.ErrorType, &attrs); err != nil {
			return nil, err
		}
		var stored []byte
		switch v := attrs.(type) {
		case []byte:
			stored = v
		case string:
			stored = []byte(v)
		case nil:
		default:
			return nil, fmt.Errorf("span %s attributes: unexpected column type %T", s.SpanID, attrs)
		}
		if decode == nil {
			s.Attributes = string(stored)
		} else {
			a, err := decode(&s, stored)
			if err != nil {
				return nil, fmt.Errorf("span %s attributes: %w", s.SpanID, err)
			}
			s.Attributes = a
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ScanKeyEvents reads every row of rows and closes it. The columns are, in order: event_id,
// trace_id, span_id, session_id, time_unix_nano, kind, name, severity_number, service_name,
// message, attributes (the KeyEvent fields in declaration order).
func ScanKeyEvents(rows Rows) ([]KeyEvent, error) {
	defer rows.Close()
	var out []KeyEvent
	for rows.Next() {
		var e KeyEvent
		if err := rows.Scan(&e.EventID, &e.TraceID, &e.SpanID, &e.SessionID, &e.Time, &e.Kind, &e.Name, &e.Severity,
			&e.Service, &e.Message, &e.Attributes); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// WarmRun is the run traceID rebuilt from its warm records (RebuildTraces, RebuildAlerts; Tier
// "warm"), or ErrNotFound when there are none.
func WarmRun(traceID string, spans []SpanSummary, events []KeyEvent) (*Run, error) {
	if len(spans) == 0 && len(events) == 0 {
		return nil, ErrNotFound
	}
	td, err := RebuildTraces(spans, events)
	if err != nil {
		return nil, err
	}
	ld, err := RebuildAlerts(events)
	if err != nil {
		return nil, err
	}
	return &Run{TraceID: traceID, Traces: td, Logs: ld, Tier: TierWarm}, nil
}

// SessionPage is the cold tier's listing of ss (merged sessions, newest first): one row per
// session (SessionRows) that f keeps (RunFilter.Keep: the session's first seen time in
// [Since, Until), its id), at most f.Limit of them. A backend that already applied part of f in
// its query loses nothing by passing f whole.
func SessionPage(ss []Session, f RunFilter) []RunSummary {
	var rows []RunSummary
	for _, r := range SessionRows(ss, time.Time{}) {
		if !f.Keep(r) {
			continue
		}
		rows = append(rows, r)
		if f.Limit > 0 && len(rows) == f.Limit {
			break
		}
	}
	return rows
}
