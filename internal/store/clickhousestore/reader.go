package clickhousestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/store"
)

// Querier is what the readers need of a database handle (*sql.DB).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// HotTables names the contrib clickhouseexporter's tables (its `database`, `traces_table_name`,
// `logs_table_name`; defaults default, otel_traces, otel_logs).
type HotTables struct {
	Database string
	Traces   string
	Logs     string
}

func (h HotTables) traces() string {
	return Schema{Database: h.Database}.Table(orDefault(h.Traces, "otel_traces"))
}

func (h HotTables) logs() string {
	return Schema{Database: h.Database}.Table(orDefault(h.Logs, "otel_logs"))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// HotReader reads the contrib exporter's tables (store.Reader, Tier "hot"). Those tables keep
// attribute values as strings (Map(String, String)); the reader gives usage counts
// (gen_ai.usage.*, llm.token_count.*) back as integers and every other value as a string.
type HotReader struct {
	DB          Querier
	Tables      HotTables
	SessionKeys []string
	closer      func() error
}

// WarmReader reads runagain_span_summaries and runagain_key_events (Tier "warm").
type WarmReader struct {
	DB     Querier
	Schema Schema
	closer func() error
}

// ColdReader reads runagain_sessions, merging partials per session (Tier "cold").
type ColdReader struct {
	DB     Querier
	Schema Schema
	closer func() error
}

// Close closes nothing: the handle belongs to the caller.
func (r *HotReader) Close() error  { return closeFn(r.closer) }
func (r *WarmReader) Close() error { return closeFn(r.closer) }
func (r *ColdReader) Close() error { return closeFn(r.closer) }

func closeFn(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

// sessionExpr picks the first non-empty session key from span, then resource attributes.
func sessionExpr(keys []string) string {
	if keys == nil {
		keys = genai.DefaultSessionKeys
	}
	var parts []string
	for _, m := range []string{"SpanAttributes", "ResourceAttributes"} {
		for _, k := range keys {
			v := fmt.Sprintf("%s[%s]", m, Quote(k))
			parts = append(parts, v+" != ''", v)
		}
	}
	return "multiIf(" + strings.Join(parts, ", ") + ", '')"
}

func firstOf(keys ...string) string {
	var parts []string
	for _, k := range keys {
		v := fmt.Sprintf("SpanAttributes[%s]", Quote(k))
		parts = append(parts, v+" != ''", v)
	}
	return "multiIf(" + strings.Join(parts, ", ") + ", '')"
}

// RunsQuery is the SQL HotReader.Runs issues.
func (r *HotReader) RunsQuery(f store.RunFilter) string {
	model := firstOf(genai.AttrResponseModel, genai.AttrRequestModel, genai.AttrOpenInferenceModel)
	in := "toInt64OrZero(" + firstOf(genai.AttrUsageInputTokens, genai.AttrLegacyPromptTokens, genai.AttrOpenInferencePrompt) + ")"
	out := "toInt64OrZero(" + firstOf(genai.AttrUsageOutputTokens, genai.AttrLegacyComplTokens, genai.AttrOpenInferenceCompl) + ")"
	q := fmt.Sprintf(`SELECT TraceId, toString(max(%s)) AS session,
  toInt64(min(toUnixTimestamp64Nano(Timestamp))) AS start_ns,
  toInt64(max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration))) AS end_ns,
  toInt64(count()) AS spans,
  arrayStringConcat(arraySort(groupUniqArrayIf(%s, %s != '')), ',') AS models,
  toInt64(sum(%s)) AS input_tokens, toInt64(sum(%s)) AS output_tokens,
  toInt64(countIf(StatusCode = 'Error')) AS errors
FROM (SELECT * FROM %s WHERE TraceId != '' LIMIT 1 BY TraceId, SpanId)
GROUP BY TraceId`, sessionExpr(r.SessionKeys), model, model, in, out, r.Tables.traces())
	q += having(f, "start_ns", "if(session != '', session, TraceId)")
	q += "\nORDER BY start_ns DESC, TraceId" + limit(f)
	return q
}

// having renders f's time range and session as a HAVING clause on the listing's start column and
// its session expression ("" when f has neither).
func having(f store.RunFilter, col, session string) string {
	var conds []string
	if !f.Since.IsZero() {
		conds = append(conds, fmt.Sprintf("%s >= %d", col, f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		conds = append(conds, fmt.Sprintf("%s < %d", col, f.Until.UnixNano()))
	}
	if f.SessionID != "" {
		conds = append(conds, fmt.Sprintf("%s = %s", session, Quote(f.SessionID)))
	}
	if len(conds) == 0 {
		return ""
	}
	return "\nHAVING " + strings.Join(conds, " AND ")
}

func limit(f store.RunFilter) string {
	if f.Limit <= 0 {
		return ""
	}
	return fmt.Sprintf("\nLIMIT %d", f.Limit)
}

func scanSummaries(rows *sql.Rows, tier string, withCost bool) ([]store.RunSummary, error) {
	// withCost: the query has two more columns, cost_usd and unpriced.
	defer rows.Close()
	var out []store.RunSummary
	for rows.Next() {
		var r store.RunSummary
		var start, end int64
		var models string
		dest := []any{&r.TraceID, &r.SessionID, &start, &end, &r.Spans, &models, &r.InputTokens, &r.OutputTokens, &r.Errors}
		if withCost {
			dest = append(dest, &r.CostUSD, &r.Unpriced)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if r.SessionID == "" {
			r.SessionID = r.TraceID
		}
		r.Start, r.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		r.Models = split(models)
		r.Tier = tier
		out = append(out, r)
	}
	return out, rows.Err()
}

func split(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// ClickHouse error codes (ClickHouse src/Common/ErrorCodes.cpp) that mean "not there".
const (
	codeUnknownTable    = 60 // UNKNOWN_TABLE
	codeUnknownDatabase = 81 // UNKNOWN_DATABASE
)

// codeInText finds "Code: 60" / "code: 81," in an exception rendered as text (the HTTP
// protocol's errors, which clickhouse-go does not decode into an Exception).
var codeInText = regexp.MustCompile(`(?i)\bcode: (\d+)\b`)

// MissingTable reports whether err says a table or database does not exist (ClickHouse codes
// 60 UNKNOWN_TABLE, 81 UNKNOWN_DATABASE): a tier that was never configured reads as empty. It
// reads the code of the driver's *clickhouse.Exception (native protocol, nested exceptions
// included), else the code in the error text (HTTP protocol, chDB).
func MissingTable(err error) bool {
	if err == nil {
		return false
	}
	missing := func(code int32) bool { return code == codeUnknownTable || code == codeUnknownDatabase }
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		if missing(ex.Code) {
			return true
		}
		for _, n := range ex.Nested {
			if missing(n.Code) {
				return true
			}
		}
		return false
	}
	for _, m := range codeInText.FindAllStringSubmatch(err.Error(), -1) {
		if c, convErr := strconv.Atoi(m[1]); convErr == nil && missing(int32(c)) {
			return true
		}
	}
	return false
}

// Runs implements store.Reader.
func (r *HotReader) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	rows, err := r.DB.QueryContext(ctx, r.RunsQuery(f))
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: list runs: %w", err)
	}
	return scanSummaries(rows, store.TierHot, false)
}

// SpansQuery is the SQL HotReader.Run issues for the spans of traceID.
func (r *HotReader) SpansQuery(traceID string) string {
	return fmt.Sprintf(`SELECT SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
  toJSONString(ResourceAttributes), ScopeName, ScopeVersion, toJSONString(SpanAttributes),
  toInt64(toUnixTimestamp64Nano(Timestamp)), toInt64(Duration), StatusCode, StatusMessage,
  arrayStringConcat(arrayMap(x -> toString(toUnixTimestamp64Nano(x)), Events.Timestamp), ','),
  toJSONString(Events.Name), toJSONString(Events.Attributes),
  toJSONString(Links.TraceId), toJSONString(Links.SpanId), toJSONString(Links.TraceState), toJSONString(Links.Attributes)
FROM %s WHERE TraceId = %s
ORDER BY Timestamp, SpanId
LIMIT 1 BY SpanId`, r.Tables.traces(), Quote(traceID))
}

// LogsQuery is the SQL HotReader.Run issues for the log records of traceID.
func (r *HotReader) LogsQuery(traceID string) string {
	return fmt.Sprintf(`SELECT toInt64(toUnixTimestamp64Nano(Timestamp)), SpanId, SeverityText, toInt32(SeverityNumber),
  Body, toJSONString(ResourceAttributes), ScopeName, ScopeVersion, toJSONString(LogAttributes), EventName
FROM %s WHERE TraceId = %s
ORDER BY Timestamp
LIMIT 1 BY Timestamp, SpanId, Body, EventName`, r.Tables.logs(), Quote(traceID))
}

// Run implements store.Reader.
func (r *HotReader) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	tid, err := traceIDFrom(traceID)
	if err != nil {
		return nil, err
	}
	rows, err := r.DB.QueryContext(ctx, r.SpansQuery(traceID))
	if MissingTable(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: read run %s: %w", traceID, err)
	}
	run := &store.Run{TraceID: traceID, Traces: ptrace.NewTraces(), Logs: plog.NewLogs(), Tier: store.TierHot}
	n := 0
	for rows.Next() {
		var spanID, parent, state, name, kind, service, resJSON, scopeName, scopeVersion, attrJSON, status, statusMsg string
		var evTimes, evNames, evAttrs, lTraces, lSpans, lStates, lAttrs string
		var start, dur int64
		if err := rows.Scan(&spanID, &parent, &state, &name, &kind, &service, &resJSON, &scopeName, &scopeVersion,
			&attrJSON, &start, &dur, &status, &statusMsg, &evTimes, &evNames, &evAttrs, &lTraces, &lSpans, &lStates, &lAttrs); err != nil {
			rows.Close()
			return nil, err
		}
		rs := run.Traces.ResourceSpans().AppendEmpty()
		if err := putStrings(rs.Resource().Attributes(), resJSON); err != nil {
			rows.Close()
			return nil, fmt.Errorf("clickhouse hot tier: span %s resource: %w", spanID, err)
		}
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scopeName)
		ss.Scope().SetVersion(scopeVersion)
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		if id, err := spanIDFrom(spanID); err == nil {
			sp.SetSpanID(id)
		}
		if id, err := spanIDFrom(parent); err == nil && parent != "" {
			sp.SetParentSpanID(id)
		}
		sp.TraceState().FromRaw(state)
		sp.SetName(name)
		sp.SetKind(kindFrom(kind))
		sp.SetStartTimestamp(pcommon.Timestamp(start))
		sp.SetEndTimestamp(pcommon.Timestamp(start + dur))
		sp.Status().SetCode(statusFrom(status))
		sp.Status().SetMessage(statusMsg)
		if err := putStrings(sp.Attributes(), attrJSON); err != nil {
			rows.Close()
			return nil, fmt.Errorf("clickhouse hot tier: span %s attributes: %w", spanID, err)
		}
		if err := putEvents(sp, evTimes, evNames, evAttrs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("clickhouse hot tier: span %s events: %w", spanID, err)
		}
		if err := putLinks(sp, lTraces, lSpans, lStates, lAttrs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("clickhouse hot tier: span %s links: %w", spanID, err)
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, store.ErrNotFound
	}
	lrows, err := r.DB.QueryContext(ctx, r.LogsQuery(traceID))
	if MissingTable(err) {
		return run, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: read logs of %s: %w", traceID, err)
	}
	defer lrows.Close()
	for lrows.Next() {
		var ts int64
		var sev int32
		var spanID, sevText, body, resJSON, scopeName, scopeVersion, attrJSON, event string
		if err := lrows.Scan(&ts, &spanID, &sevText, &sev, &body, &resJSON, &scopeName, &scopeVersion, &attrJSON, &event); err != nil {
			return nil, err
		}
		rl := run.Logs.ResourceLogs().AppendEmpty()
		if err := putStrings(rl.Resource().Attributes(), resJSON); err != nil {
			return nil, err
		}
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(scopeName)
		sl.Scope().SetVersion(scopeVersion)
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(ts))
		lr.SetTraceID(tid)
		if id, err := spanIDFrom(spanID); err == nil && spanID != "" {
			lr.SetSpanID(id)
		}
		lr.SetSeverityText(sevText)
		lr.SetSeverityNumber(plog.SeverityNumber(sev))
		lr.Body().SetStr(body)
		lr.SetEventName(event)
		if err := putStrings(lr.Attributes(), attrJSON); err != nil {
			return nil, err
		}
	}
	return run, lrows.Err()
}

// numericKey tells whether a string attribute from the contrib tables is a count to give back
// as an integer.
func numericKey(k string) bool {
	return strings.HasPrefix(k, "gen_ai.usage.") || strings.HasPrefix(k, "llm.token_count.")
}

func putStrings(m pcommon.Map, js string) error {
	if js == "" || js == "{}" {
		return nil
	}
	var kv map[string]string
	if err := json.Unmarshal([]byte(js), &kv); err != nil {
		return err
	}
	for k, v := range kv {
		if numericKey(k) {
			if i, err := strconv.ParseInt(v, 10, 64); err == nil {
				m.PutInt(k, i)
				continue
			}
		}
		m.PutStr(k, v)
	}
	return nil
}

func putEvents(sp ptrace.Span, times, namesJSON, attrsJSON string) error {
	if times == "" {
		return nil
	}
	var names []string
	var attrs []map[string]string
	if err := json.Unmarshal([]byte(namesJSON), &names); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(attrsJSON), &attrs); err != nil {
		return err
	}
	for i, t := range strings.Split(times, ",") {
		ev := sp.Events().AppendEmpty()
		ns, _ := strconv.ParseInt(t, 10, 64)
		ev.SetTimestamp(pcommon.Timestamp(ns))
		if i < len(names) {
			ev.SetName(names[i])
		}
		if i < len(attrs) {
			for k, v := range attrs[i] {
				ev.Attributes().PutStr(k, v)
			}
		}
	}
	return nil
}

func putLinks(sp ptrace.Span, tracesJSON, spansJSON, statesJSON, attrsJSON string) error {
	var traces, spans, states []string
	var attrs []map[string]string
	for _, x := range []struct {
		js  string
		dst any
	}{{tracesJSON, &traces}, {spansJSON, &spans}, {statesJSON, &states}, {attrsJSON, &attrs}} {
		if x.js == "" {
			continue
		}
		if err := json.Unmarshal([]byte(x.js), x.dst); err != nil {
			return err
		}
	}
	for i := range traces {
		l := sp.Links().AppendEmpty()
		if id, err := traceIDFrom(traces[i]); err == nil {
			l.SetTraceID(id)
		}
		if i < len(spans) {
			if id, err := spanIDFrom(spans[i]); err == nil {
				l.SetSpanID(id)
			}
		}
		if i < len(states) {
			l.TraceState().FromRaw(states[i])
		}
		if i < len(attrs) {
			for k, v := range attrs[i] {
				l.Attributes().PutStr(k, v)
			}
		}
	}
	return nil
}

func kindFrom(s string) ptrace.SpanKind {
	for k := ptrace.SpanKindUnspecified; k <= ptrace.SpanKindConsumer; k++ {
		if k.String() == s {
			return k
		}
	}
	return ptrace.SpanKindUnspecified
}

func statusFrom(s string) ptrace.StatusCode {
	for c := ptrace.StatusCodeUnset; c <= ptrace.StatusCodeError; c++ {
		if c.String() == s {
			return c
		}
	}
	return ptrace.StatusCodeUnset
}

func traceIDFrom(s string) (pcommon.TraceID, error) { return otlpid.ParseTraceID(s) }

func spanIDFrom(s string) (pcommon.SpanID, error) { return otlpid.ParseSpanID(s) }

// RunsQuery is the SQL WarmReader.Runs issues.
func (r *WarmReader) RunsQuery(f store.RunFilter) string {
	q := fmt.Sprintf(`SELECT trace_id, max(session_id) AS session,
  min(start_time_unix_nano) AS start_ns, max(end_time_unix_nano) AS end_ns, toInt64(count()) AS spans,
  arrayStringConcat(arraySort(groupUniqArrayIf(toString(model), model != '')), ',') AS models,
  sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  toInt64(countIf(status_code = 2)) AS errors, sum(cost_usd) AS cost, toInt64(sum(unpriced)) AS unpriced
FROM (SELECT * FROM %s LIMIT 1 BY trace_id, span_id)
GROUP BY trace_id`, r.Schema.Table(TableSpanSummaries))
	q += having(f, "start_ns", "if(session != '', session, trace_id)")
	return q + "\nORDER BY start_ns DESC, trace_id" + limit(f)
}

// Runs implements store.Reader.
func (r *WarmReader) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	rows, err := r.DB.QueryContext(ctx, r.RunsQuery(f))
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: list runs: %w", err)
	}
	return scanSummaries(rows, store.TierWarm, true)
}

// SpansQuery is the SQL WarmReader.Run issues for the summaries of traceID.
func (r *WarmReader) SpansQuery(traceID string) string {
	return fmt.Sprintf(`SELECT trace_id, span_id, parent_span_id, session_id, toString(name), kind, start_time_unix_nano,
  end_time_unix_nano, status_code, status_message, toString(service_name), toString(genai_kind), toString(model),
  input_tokens, output_tokens, cost_usd, unpriced, toString(tool_name), toString(agent_name), toString(error_type), attributes
FROM %s WHERE trace_id = %s
ORDER BY start_time_unix_nano, span_id
LIMIT 1 BY span_id`, r.Schema.Table(TableSpanSummaries), Quote(traceID))
}

// EventsQuery is the SQL WarmReader.Run issues for the key events of traceID.
func (r *WarmReader) EventsQuery(traceID string) string {
	return fmt.Sprintf(`SELECT event_id, trace_id, span_id, session_id, time_unix_nano, toString(kind), toString(name),
  severity_number, toString(service_name), message, attributes
FROM %s WHERE trace_id = %s
ORDER BY time_unix_nano, event_id
LIMIT 1 BY event_id`, r.Schema.Table(TableKeyEvents), Quote(traceID))
}

// Run implements store.Reader.
func (r *WarmReader) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	if _, err := traceIDFrom(traceID); err != nil {
		return nil, err
	}
	rows, err := r.DB.QueryContext(ctx, r.SpansQuery(traceID))
	if MissingTable(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: read run %s: %w", traceID, err)
	}
	var spans []store.SpanSummary
	for rows.Next() {
		var s store.SpanSummary
		if err := rows.Scan(&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.SessionID, &s.Name, &s.Kind, &s.Start, &s.End,
			&s.StatusCode, &s.StatusMessage, &s.Service, &s.GenAIKind, &s.Model, &s.InputTokens, &s.OutputTokens,
			&s.CostUSD, &s.Unpriced, &s.ToolName, &s.AgentName, &s.ErrorType, &s.Attributes); err != nil {
			rows.Close()
			return nil, err
		}
		spans = append(spans, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	erows, err := r.DB.QueryContext(ctx, r.EventsQuery(traceID))
	if MissingTable(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: read events of %s: %w", traceID, err)
	}
	var events []store.KeyEvent
	for erows.Next() {
		var e store.KeyEvent
		if err := erows.Scan(&e.EventID, &e.TraceID, &e.SpanID, &e.SessionID, &e.Time, &e.Kind, &e.Name, &e.Severity,
			&e.Service, &e.Message, &e.Attributes); err != nil {
			erows.Close()
			return nil, err
		}
		events = append(events, e)
	}
	erows.Close()
	if err := erows.Err(); err != nil {
		return nil, err
	}
	if len(spans) == 0 && len(events) == 0 {
		return nil, store.ErrNotFound
	}
	td, err := store.RebuildTraces(spans, events)
	if err != nil {
		return nil, err
	}
	ld, err := store.RebuildAlerts(events)
	if err != nil {
		return nil, err
	}
	return &store.Run{TraceID: traceID, Traces: td, Logs: ld, Tier: store.TierWarm}, nil
}

// SessionsQuery is the SQL ColdReader issues: partials merged per session; where is ” or a
// WHERE clause on the merged row.
func (r *ColdReader) SessionsQuery(where string) string {
	q := fmt.Sprintf(`SELECT session_id, first_seen, last_seen, agent, service, models, trace_ids, spans, input_tokens,
  output_tokens, cost_usd, unpriced, errors, alerts, partials FROM (
SELECT session_id, min(first_seen_unix_nano) AS first_seen, max(last_seen_unix_nano) AS last_seen,
  max(agent) AS agent, max(service) AS service,
  arrayStringConcat(arraySort(groupUniqArrayArray(models)), ',') AS models,
  arrayStringConcat(arraySort(groupUniqArrayArray(trace_ids)), ',') AS trace_ids,
  sum(spans) AS spans, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cost_usd) AS cost_usd, sum(unpriced) AS unpriced, sum(errors) AS errors, sum(alerts) AS alerts, sum(partials) AS partials
FROM %s GROUP BY session_id)`, r.Schema.Table(TableSessions))
	if where != "" {
		q += "\nWHERE " + where
	}
	return q + "\nORDER BY last_seen DESC, session_id"
}

func (r *ColdReader) sessions(ctx context.Context, where string) ([]store.Session, error) {
	rows, err := r.DB.QueryContext(ctx, r.SessionsQuery(where))
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse cold tier: read sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var s store.Session
		var models, traces string
		if err := rows.Scan(&s.SessionID, &s.FirstSeen, &s.LastSeen, &s.Agent, &s.Service, &models, &traces, &s.Spans,
			&s.InputTokens, &s.OutputTokens, &s.CostUSD, &s.Unpriced, &s.Errors, &s.Alerts, &s.Partials); err != nil {
			return nil, err
		}
		s.Models, s.TraceIDs = split(models), split(traces)
		out = append(out, s)
	}
	return out, rows.Err()
}

// Runs implements store.Reader: one row per session.
func (r *ColdReader) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	where := ""
	if !f.Since.IsZero() {
		where = fmt.Sprintf("first_seen >= %d", f.Since.UnixNano())
	}
	ss, err := r.sessions(ctx, where)
	if err != nil {
		return nil, err
	}
	var rows []store.RunSummary
	for _, row := range store.SessionRows(ss, f.Since) {
		if f.Keep(row) {
			rows = append(rows, row)
		}
	}
	if f.Limit > 0 && len(rows) > f.Limit {
		rows = rows[:f.Limit]
	}
	return rows, nil
}

// ListsSessions implements store.SessionLister: each row is a whole session.
func (r *ColdReader) ListsSessions() bool { return true }

// Run implements store.Reader: the session record of the run.
func (r *ColdReader) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	if _, err := traceIDFrom(traceID); err != nil {
		return nil, err
	}
	ss, err := r.sessions(ctx, fmt.Sprintf("has(splitByChar(',', trace_ids), %s)", Quote(traceID)))
	if err != nil {
		return nil, err
	}
	if len(ss) == 0 {
		return nil, store.ErrNotFound
	}
	return store.SessionRun(traceID, ss[0]), nil
}

var (
	_ store.Reader = (*HotReader)(nil)
	_ store.Reader = (*WarmReader)(nil)
	_ store.Reader = (*ColdReader)(nil)
)

// Open returns a store.Reader over all three tiers on one ClickHouse endpoint, in fallback
// order hot, warm, cold; the returned reader's Close closes the connection.
func Open(db *sql.DB, hot HotTables, schema Schema, sessionKeys []string) store.Reader {
	t := store.NewTiered(&HotReader{DB: db, Tables: hot, SessionKeys: sessionKeys},
		&WarmReader{DB: db, Schema: schema}, &ColdReader{DB: db, Schema: schema, closer: db.Close})
	return t
}
