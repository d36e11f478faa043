// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

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

// Close closes the connection when the reader owns it (Open's last tier); otherwise nothing:
// the handle belongs to the caller.
func (r *HotReader) Close() error { return closeFn(r.closer) }

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

// pick narrows a listing with a limit and no session filter to the runs it returns: the newest
// f.Limit trace ids in the time range are chosen on TraceId and Timestamp alone (two narrow
// columns of otel_traces), and only their spans are read whole (the TraceId bloom filter skips
// the other granules). The contrib tables have no run index of ours; with a session filter every
// span's attributes are read, as before.
func (r *HotReader) pick(f store.RunFilter) string {
	if f.Limit <= 0 || f.SessionID != "" {
		return ""
	}
	start := "toInt64(min(toUnixTimestamp64Nano(Timestamp)))"
	q := fmt.Sprintf(" AND TraceId IN (SELECT TraceId FROM %s WHERE TraceId != '' GROUP BY TraceId", r.Tables.traces())
	var conds []string
	if !f.Since.IsZero() {
		conds = append(conds, fmt.Sprintf("%s >= %d", start, f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		conds = append(conds, fmt.Sprintf("%s < %d", start, f.Until.UnixNano()))
	}
	if len(conds) > 0 {
		q += " HAVING " + strings.Join(conds, " AND ")
	}
	return q + fmt.Sprintf(" ORDER BY %s DESC, TraceId LIMIT %d)", start, f.Limit)
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
FROM (SELECT * FROM %s WHERE TraceId != ''%s LIMIT 1 BY TraceId, SpanId)
GROUP BY TraceId`, sessionExpr(r.SessionKeys), model, model, in, out, r.Tables.traces(), r.pick(f))
	q += having(f, "start_ns", "if(session != '', session, TraceId)")
	q += "\nORDER BY start_ns DESC, TraceId" + limit(f)
	return q
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
LIMIT 1 BY if(length(LogAttributes['runagain.record.id']) = 64, LogAttributes['runagain.record.id'],
  concat(toString(Timestamp), '|', SpanId, '|', Body, '|', EventName))`, r.Tables.logs(), Quote(traceID))
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
