// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/runagain/runagain/internal/store"
)

// WarmReader reads runagain_span_summaries and runagain_key_events (Tier "warm").
type WarmReader struct {
	DB     Querier
	Schema Schema
	// SessionKeys name a run's session when a run is signed on the spot (PatternRuns); nil:
	// genai.DefaultSessionKeys.
	SessionKeys []string
	closer      func() error
}

// Close closes the connection when the reader owns it (Open's last tier); otherwise nothing:
// the handle belongs to the caller.
func (r *WarmReader) Close() error { return closeFn(r.closer) }

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

// Runs implements store.Reader: from the run index (runagain_runs), its joined runs counted by
// the counting rule (runindex.go), or, in a database without it, by aggregating every span
// summary (RunsQuery, which adds every span's usage: such a database predates the rule; so does
// one whose index an older release created, until the writer upgrades it).
func (r *WarmReader) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	rows, err := r.DB.QueryContext(ctx, r.IndexedRunsQuery(f))
	if err == nil {
		out, err := r.scanIndexed(ctx, rows)
		if err != nil {
			return nil, fmt.Errorf("clickhouse warm tier: list runs: %w", err)
		}
		return out, nil
	}
	if MissingTable(err) || missingColumn(err) {
		rows, err = r.DB.QueryContext(ctx, r.RunsQuery(f))
	}
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
	spans, err := store.ScanSpanSummaries(rows, nil)
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: read run %s: %w", traceID, err)
	}
	erows, err := r.DB.QueryContext(ctx, r.EventsQuery(traceID))
	if MissingTable(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: read events of %s: %w", traceID, err)
	}
	events, err := store.ScanKeyEvents(erows)
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: read events of %s: %w", traceID, err)
	}
	return store.WarmRun(traceID, spans, events)
}
