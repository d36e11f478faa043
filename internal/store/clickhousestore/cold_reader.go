// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/runagain/runagain/internal/store"
)

// ColdReader reads runagain_sessions, merging partials per session (Tier "cold").
type ColdReader struct {
	DB     Querier
	Schema Schema
	closer func() error
}

// Close closes the connection when the reader owns it (Open's last tier); otherwise nothing:
// the handle belongs to the caller.
func (r *ColdReader) Close() error { return closeFn(r.closer) }

// SessionsQuery is the SQL ColdReader issues: partials merged per session, newest first. where
// is ” or a condition on the partial rows (applied before merging: a session id); having is ”
// or a condition on the merged row (its first_seen, its trace ids); limit 0 is none.
func (r *ColdReader) SessionsQuery(where, having string, limit int) string {
	inner := ""
	if where != "" {
		inner = "\nWHERE " + where
	}
	q := fmt.Sprintf(`SELECT session_id, first_seen, last_seen, agent, service, models, trace_ids, spans, input_tokens,
  output_tokens, cost_usd, unpriced, errors, alerts, partials FROM (
SELECT session_id, min(first_seen_unix_nano) AS first_seen, max(last_seen_unix_nano) AS last_seen,
  max(agent) AS agent, max(service) AS service,
  arrayStringConcat(arraySort(groupUniqArrayArray(models)), ',') AS models,
  arrayStringConcat(arraySort(groupUniqArrayArray(trace_ids)), ',') AS trace_ids,
  sum(spans) AS spans, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cost_usd) AS cost_usd, sum(unpriced) AS unpriced, sum(errors) AS errors, sum(alerts) AS alerts, sum(partials) AS partials
FROM %s%s GROUP BY session_id)`, r.Schema.Table(TableSessions), inner)
	if having != "" {
		q += "\nWHERE " + having
	}
	q += "\nORDER BY last_seen DESC, session_id"
	if limit > 0 {
		q += fmt.Sprintf("\nLIMIT %d", limit)
	}
	return q
}

// RunsQuery is the SQL ColdReader.Runs issues for f: the session filter on the partials, the time
// range on the merged first_seen (RunFilter.Keep on a session row), the limit, all in SQL.
func (r *ColdReader) RunsQuery(f store.RunFilter) string {
	where := ""
	if f.SessionID != "" {
		where = "session_id = " + Quote(f.SessionID)
	}
	var conds []string
	if !f.Since.IsZero() {
		conds = append(conds, fmt.Sprintf("first_seen >= %d", f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		conds = append(conds, fmt.Sprintf("first_seen < %d", f.Until.UnixNano()))
	}
	return r.SessionsQuery(where, strings.Join(conds, " AND "), f.Limit)
}

func (r *ColdReader) sessions(ctx context.Context, q string) ([]store.Session, error) {
	rows, err := r.DB.QueryContext(ctx, q)
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

// Runs implements store.Reader: one row per session, filtered and limited in SQL (RunsQuery).
func (r *ColdReader) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	ss, err := r.sessions(ctx, r.RunsQuery(f))
	if err != nil {
		return nil, err
	}
	return store.SessionPage(ss, f), nil
}

// ListsSessions implements store.SessionLister: each row is a whole session.
func (r *ColdReader) ListsSessions() bool { return true }

// Run implements store.Reader: the session record of the run.
func (r *ColdReader) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	if _, err := traceIDFrom(traceID); err != nil {
		return nil, err
	}
	ss, err := r.sessions(ctx, r.SessionsQuery("", fmt.Sprintf("has(splitByChar(',', trace_ids), %s)", Quote(traceID)), 1))
	if err != nil {
		return nil, err
	}
	if len(ss) == 0 {
		return nil, store.ErrNotFound
	}
	return store.SessionRun(traceID, ss[0]), nil
}
