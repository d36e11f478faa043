// SPDX-License-Identifier: Apache-2.0

package clickhousestore

// # Run index (warm tier): runagain_runs, fed by the materialised view runagain_runs_mv
//
//	runagain_runs  AggregatingMergeTree ORDER BY trace_id, one row per run once merged
//	  trace_id              String
//	  session_id            SimpleAggregateFunction(max, String)   the greatest session id ('' none)
//	  start_time_unix_nano  SimpleAggregateFunction(min, Int64)
//	  end_time_unix_nano    SimpleAggregateFunction(max, Int64)
//	  spans                 AggregateFunction(groupUniqArray, Tuple(span_id String, model String,
//	                          input_tokens Int64, output_tokens Int64, error UInt8, cost_usd Float64,
//	                          unpriced Int32)): one tuple per span, so a span inserted twice (an
//	                          at-least-once retry appends the summary again) counts once; counts,
//	                          models and sums are computed from it when read
//	  ingested_unix_nano    SimpleAggregateFunction(max, Int64)    retention clock (TTL)
//	  rule_spans            AggregateFunction(groupUniqArray, Tuple(span_id String,
//	                          parent_span_id String, derived UInt8)): the run's instrumented
//	                          LLM spans (derived 0) and derived exchanges (derived 1), what says
//	                          whether the counting rule changes the run's sums (below)
//
// # The counting rule (internal/runview/rule), as the SQLite run index applies it
//
// A run joined from an instrumented agent's spans and the proxy's exchanges holds each LLM call
// twice: the agent's span and the exchange with derived GenAI attributes (runagain.genai.derived
// with runagain.fixture.source, read from the summary's attributes). A run with a derived
// exchange, or with an instrumented LLM span below another (an aggregate call), is counted by
// store.CountByRule over its summaries (one primary-key read of runagain_span_summaries per such
// run listed); every other run keeps the sums of its spans tuples. The listing query says which
// runs need it (column rule), from rule_spans, so the halves of a joined run may arrive in any
// order and any batch. An index created before rule_spans existed gains the column and its view
// is recreated, then backfilled from the summaries (CreateWarm; set union, so idempotent).
//
// The view turns every insert into runagain_span_summaries into partial rows; background merges
// fold them, and readers GROUP BY trace_id to fold what is not merged yet. Every aggregate is
// idempotent (min, max, set union), so the index agrees with the summaries however often a batch
// is retried. Listing the newest N runs reads two narrow columns (trace_id, start) of the runs
// table to pick them, then only their rows: it no longer reads every span summary. Alerts are not
// in it (the warm ClickHouse listing never reported them). Created by Writer.CreateWarm with the
// warm tables, and filled once from the summaries already stored when the table did not exist
// (an older deployment); a reader of a database without it lists by aggregating the summaries.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// Run index names.
const (
	TableRuns = "runagain_runs"
	ViewRuns  = "runagain_runs_mv"
	// ColumnRuleSpans is the run index's column of the spans the counting rule reads.
	ColumnRuleSpans = "rule_spans"
)

// derivedExpr is 1 for a summary row of a derived exchange (store.DerivedExchange, from the row's
// attributes JSON: the warm tier keeps both keys, store.SummaryAttribute).
const derivedExpr = `toUInt8(genai_kind IN ('llm', 'tool') AND JSONExtractBool(attributes, 'runagain.genai.derived')
    AND JSONHas(attributes, 'runagain.fixture.source'))`

// ruleSpansType is the type of the rule_spans column.
const ruleSpansType = "AggregateFunction(groupUniqArray, Tuple(String, String, UInt8))"

// runsSelect is the SELECT that turns span summaries (FROM source) into partial run rows.
func runsSelect(source string) string {
	return fmt.Sprintf(`SELECT trace_id, max(session_id) AS session_id, min(start_time_unix_nano) AS start_time_unix_nano,
  max(end_time_unix_nano) AS end_time_unix_nano,
  groupUniqArrayState(tuple(span_id, toString(model), input_tokens, output_tokens, toUInt8(status_code = 2), cost_usd, unpriced)) AS spans,
  max(ingested_unix_nano) AS ingested_unix_nano,
  groupUniqArrayStateIf(tuple(span_id, parent_span_id, %s), genai_kind = 'llm' OR %s = 1) AS rule_spans
FROM %s
GROUP BY trace_id`, derivedExpr, derivedExpr, source)
}

// RunsDDL creates the run index table and the view that feeds it from runagain_span_summaries.
func (s Schema) RunsDDL() []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  trace_id String CODEC(ZSTD(1)),
  session_id SimpleAggregateFunction(max, String) CODEC(ZSTD(1)),
  start_time_unix_nano SimpleAggregateFunction(min, Int64) CODEC(Delta(8), ZSTD(1)),
  end_time_unix_nano SimpleAggregateFunction(max, Int64) CODEC(Delta(8), ZSTD(1)),
  spans AggregateFunction(groupUniqArray, Tuple(String, String, Int64, Int64, UInt8, Float64, Int32)),
  ingested_unix_nano SimpleAggregateFunction(max, Int64) CODEC(Delta(8), ZSTD(1)),
  rule_spans %s
) ENGINE = AggregatingMergeTree
ORDER BY trace_id
%s
SETTINGS index_granularity = 8192`, s.Table(TableRuns), s.cluster(), ruleSpansType, ttl(s.WarmTTL)),
		fmt.Sprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s%s TO %s AS\n%s", s.Table(ViewRuns), s.cluster(),
			s.Table(TableRuns), runsSelect(s.Table(TableSpanSummaries))),
	}
}

// RuleSpansUpgrade adds rule_spans to a run index created before it, and recreates the view
// (ClickHouse does not alter a view's SELECT in place); RunsBackfill then fills the column.
func (s Schema) RuleSpansUpgrade() []string {
	return []string{
		fmt.Sprintf("ALTER TABLE %s%s ADD COLUMN IF NOT EXISTS %s %s", s.Table(TableRuns), s.cluster(), ColumnRuleSpans, ruleSpansType),
		fmt.Sprintf("DROP VIEW IF EXISTS %s%s", s.Table(ViewRuns), s.cluster()),
	}
}

// RunsBackfill fills the run index from the summaries already stored (idempotent: set union,
// min and max; rows the view wrote meanwhile are not counted twice).
func (s Schema) RunsBackfill() string {
	return fmt.Sprintf("INSERT INTO %s\n%s", s.Table(TableRuns), runsSelect(s.Table(TableSpanSummaries)))
}

// createRuns creates the run index; when the table did not exist, or existed without rule_spans
// (RuleSpansUpgrade), it backfills it.
func (w *Writer) createRuns(ctx context.Context) error {
	exists, err := w.count(ctx, fmt.Sprintf("SELECT toUInt64(count()) FROM system.tables WHERE database = %s AND name = %s",
		Quote(w.Schema.db()), Quote(TableRuns)))
	if err != nil {
		return fmt.Errorf("clickhouse: exists %s: %w", TableRuns, err)
	}
	upgrade := false
	if exists == 1 {
		n, err := w.count(ctx, fmt.Sprintf("SELECT toUInt64(count()) FROM system.columns WHERE database = %s AND table = %s AND name = %s",
			Quote(w.Schema.db()), Quote(TableRuns), Quote(ColumnRuleSpans)))
		if err != nil {
			return fmt.Errorf("clickhouse: columns of %s: %w", TableRuns, err)
		}
		if upgrade = n == 0; upgrade {
			if err := w.exec(ctx, w.Schema.RuleSpansUpgrade()); err != nil {
				return err
			}
		}
	}
	if err := w.exec(ctx, w.Schema.RunsDDL()); err != nil {
		return err
	}
	if exists == 1 && !upgrade {
		return nil
	}
	return w.exec(ctx, []string{w.Schema.RunsBackfill()})
}

// count runs a query of one UInt64.
func (w *Writer) count(ctx context.Context, q string) (uint64, error) {
	rows, err := w.DB.QueryContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n uint64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// IndexedRunsQuery is the SQL WarmReader.Runs issues on the run index: the runs matching f are
// chosen on trace_id, start and session only (with f.Limit, the newest f.Limit), then only their
// rows are folded, keeping the runs whose summaries are still stored (a primary key lookup in
// runagain_span_summaries: the two tables expire on the same clock, but in different parts). Its
// columns are scanSummaries' with cost, then rule: 1 when the counting rule changes the run's
// sums (a derived exchange, or an instrumented LLM span below another), and WarmReader.Runs
// recounts it (RuleRowsQuery).
func (r *WarmReader) IndexedRunsQuery(f store.RunFilter) string {
	runs := r.Schema.Table(TableRuns)
	pick := fmt.Sprintf("SELECT trace_id FROM %s GROUP BY trace_id", runs)
	conds := startConds(f.Since, f.Until)
	if f.SessionID != "" {
		conds = append(conds, fmt.Sprintf("if(max(session_id) != '', max(session_id), trace_id) = %s", Quote(f.SessionID)))
	}
	if len(conds) > 0 {
		pick += " HAVING " + strings.Join(conds, " AND ")
	}
	pick += " ORDER BY min(start_time_unix_nano) DESC, trace_id" + strings.ReplaceAll(limit(f), "\n", " ")
	return fmt.Sprintf(`SELECT trace_id, session, start_ns, end_ns, toInt64(length(s)) AS spans,
  arrayStringConcat(arraySort(arrayDistinct(arrayFilter(m -> m != '', arrayMap(x -> x.2, s)))), ',') AS models,
  toInt64(arraySum(x -> x.3, s)) AS input_tokens, toInt64(arraySum(x -> x.4, s)) AS output_tokens,
  toInt64(arraySum(x -> x.5, s)) AS errors, toFloat64(arraySum(x -> x.6, s)) AS cost, toInt64(arraySum(x -> x.7, s)) AS unpriced,
  toUInt8(arrayExists(x -> x.3 = 1 OR has(llm, x.2), r)) AS rule
FROM (
  SELECT trace_id, max(session_id) AS session, min(start_time_unix_nano) AS start_ns, max(end_time_unix_nano) AS end_ns,
    groupUniqArrayMerge(spans) AS s, groupUniqArrayMerge(rule_spans) AS r,
    arrayMap(x -> x.1, arrayFilter(x -> x.3 = 0, r)) AS llm
  FROM %s
  WHERE trace_id IN (%s) AND trace_id IN (SELECT trace_id FROM %s WHERE trace_id IN (%s))
  GROUP BY trace_id
)
ORDER BY start_ns DESC, trace_id`, runs, pick, r.Schema.Table(TableSpanSummaries), pick)
}

// RuleRowsQuery is the SQL WarmReader.Runs issues for the summaries of the runs the counting rule
// recounts (traceIDs, lowercase hex): store.RuleRow's columns and the trace id, one row a span.
func (r *WarmReader) RuleRowsQuery(traceIDs []string) string {
	quoted := make([]string, len(traceIDs))
	for i, id := range traceIDs {
		quoted[i] = Quote(id)
	}
	return fmt.Sprintf(`SELECT trace_id, span_id, parent_span_id, start_time_unix_nano, end_time_unix_nano, toString(genai_kind),
  toString(model), %s AS derived, toUInt8(JSONHas(attributes, 'runagain.rerun.edits')) AS edited,
  input_tokens, output_tokens, cost_usd, toInt64(unpriced)
FROM %s WHERE trace_id IN (%s)
ORDER BY trace_id, start_time_unix_nano, span_id
LIMIT 1 BY trace_id, span_id`, derivedExpr, r.Schema.Table(TableSpanSummaries), strings.Join(quoted, ", "))
}

// scanIndexed scans IndexedRunsQuery's rows and recounts, by the counting rule, the runs its rule
// column names.
func (r *WarmReader) scanIndexed(ctx context.Context, rows *sql.Rows) ([]store.RunSummary, error) {
	defer rows.Close()
	var out []store.RunSummary
	recount := map[string]int{}
	var ids []string
	for rows.Next() {
		var s store.RunSummary
		var start, end int64
		var models string
		var rule uint8
		if err := rows.Scan(&s.TraceID, &s.SessionID, &start, &end, &s.Spans, &models, &s.InputTokens, &s.OutputTokens,
			&s.Errors, &s.CostUSD, &s.Unpriced, &rule); err != nil {
			return nil, err
		}
		if s.SessionID == "" {
			s.SessionID = s.TraceID
		}
		s.Start, s.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		s.Models = split(models)
		s.Tier = store.TierWarm
		if rule == 1 {
			recount[s.TraceID] = len(out)
			ids = append(ids, s.TraceID)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if len(ids) == 0 {
		return out, nil
	}
	rrows, err := r.DB.QueryContext(ctx, r.RuleRowsQuery(ids))
	if err != nil {
		return nil, fmt.Errorf("counting rule: %w", err)
	}
	defer rrows.Close()
	byRun := map[string][]store.RuleRow{}
	for rrows.Next() {
		var tid string
		var x store.RuleRow
		var derived, edited uint8
		if err := rrows.Scan(&tid, &x.SpanID, &x.ParentSpanID, &x.Start, &x.End, &x.GenAIKind, &x.Model, &derived, &edited,
			&x.InputTokens, &x.OutputTokens, &x.CostUSD, &x.Unpriced); err != nil {
			return nil, fmt.Errorf("counting rule: %w", err)
		}
		x.Exchange, x.Edited = derived == 1, edited == 1
		byRun[tid] = append(byRun[tid], x)
	}
	if err := rrows.Err(); err != nil {
		return nil, fmt.Errorf("counting rule: %w", err)
	}
	for id, i := range recount {
		t := store.CountByRule(byRun[id])
		out[i].InputTokens, out[i].OutputTokens, out[i].CostUSD, out[i].Unpriced = t.InputTokens, t.OutputTokens, t.CostUSD, t.Unpriced
	}
	return out, nil
}

// startConds are the HAVING conditions of a run index query for runs that started in [since,
// until) (a zero bound is left open).
func startConds(since, until time.Time) []string {
	var conds []string
	if !since.IsZero() {
		conds = append(conds, fmt.Sprintf("min(start_time_unix_nano) >= %d", since.UnixNano()))
	}
	if !until.IsZero() {
		conds = append(conds, fmt.Sprintf("min(start_time_unix_nano) < %d", until.UnixNano()))
	}
	return conds
}
