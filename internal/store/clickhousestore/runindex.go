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
	"fmt"
	"strings"

	"github.com/runagain/runagain/internal/store"
)

// Run index names.
const (
	TableRuns = "runagain_runs"
	ViewRuns  = "runagain_runs_mv"
)

// runsSelect is the SELECT that turns span summaries (FROM source) into partial run rows.
func runsSelect(source string) string {
	return fmt.Sprintf(`SELECT trace_id, max(session_id) AS session_id, min(start_time_unix_nano) AS start_time_unix_nano,
  max(end_time_unix_nano) AS end_time_unix_nano,
  groupUniqArrayState(tuple(span_id, toString(model), input_tokens, output_tokens, toUInt8(status_code = 2), cost_usd, unpriced)) AS spans,
  max(ingested_unix_nano) AS ingested_unix_nano
FROM %s
GROUP BY trace_id`, source)
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
  ingested_unix_nano SimpleAggregateFunction(max, Int64) CODEC(Delta(8), ZSTD(1))
) ENGINE = AggregatingMergeTree
ORDER BY trace_id
%s
SETTINGS index_granularity = 8192`, s.Table(TableRuns), s.cluster(), ttl(s.WarmTTL)),
		fmt.Sprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s%s TO %s AS\n%s", s.Table(ViewRuns), s.cluster(),
			s.Table(TableRuns), runsSelect(s.Table(TableSpanSummaries))),
	}
}

// RunsBackfill fills the run index from the summaries already stored (idempotent: set union,
// min and max; rows the view wrote meanwhile are not counted twice).
func (s Schema) RunsBackfill() string {
	return fmt.Sprintf("INSERT INTO %s\n%s", s.Table(TableRuns), runsSelect(s.Table(TableSpanSummaries)))
}

// createRuns creates the run index; when the table did not exist, it backfills it.
func (w *Writer) createRuns(ctx context.Context) error {
	rows, err := w.DB.QueryContext(ctx, fmt.Sprintf("EXISTS TABLE %s", w.Schema.Table(TableRuns)))
	if err != nil {
		return fmt.Errorf("clickhouse: exists %s: %w", TableRuns, err)
	}
	var exists uint8
	if rows.Next() {
		err = rows.Scan(&exists)
	}
	rows.Close()
	if err != nil {
		return fmt.Errorf("clickhouse: exists %s: %w", TableRuns, err)
	}
	if err := w.exec(ctx, w.Schema.RunsDDL()); err != nil {
		return err
	}
	if exists == 1 {
		return nil
	}
	return w.exec(ctx, []string{w.Schema.RunsBackfill()})
}

// IndexedRunsQuery is the SQL WarmReader.Runs issues on the run index: the runs matching f are
// chosen on trace_id, start and session only (with f.Limit, the newest f.Limit), then only their
// rows are folded, keeping the runs whose summaries are still stored (a primary key lookup in
// runagain_span_summaries: the two tables expire on the same clock, but in different parts).
func (r *WarmReader) IndexedRunsQuery(f store.RunFilter) string {
	runs := r.Schema.Table(TableRuns)
	pick := fmt.Sprintf("SELECT trace_id FROM %s GROUP BY trace_id", runs)
	var conds []string
	if !f.Since.IsZero() {
		conds = append(conds, fmt.Sprintf("min(start_time_unix_nano) >= %d", f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		conds = append(conds, fmt.Sprintf("min(start_time_unix_nano) < %d", f.Until.UnixNano()))
	}
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
  toInt64(arraySum(x -> x.5, s)) AS errors, toFloat64(arraySum(x -> x.6, s)) AS cost, toInt64(arraySum(x -> x.7, s)) AS unpriced
FROM (
  SELECT trace_id, max(session_id) AS session, min(start_time_unix_nano) AS start_ns, max(end_time_unix_nano) AS end_ns,
    groupUniqArrayMerge(spans) AS s
  FROM %s
  WHERE trace_id IN (%s) AND trace_id IN (SELECT trace_id FROM %s WHERE trace_id IN (%s))
  GROUP BY trace_id
)
ORDER BY start_ns DESC, trace_id`, runs, pick, r.Schema.Table(TableSpanSummaries), pick)
}
