// SPDX-License-Identifier: Apache-2.0

// Package clickhousestore is runagain's ClickHouse backend for the warm and cold tiers (our
// DDL, written through clickhouse-go) and the reader of all three tiers: the hot tier's tables
// are the contrib clickhouseexporter's otel_traces and otel_logs (its schema, written by it).
//
// # Warm tier (MergeTree, TTL from the warm retention, measured from ingestion)
//
//	runagain_span_summaries   one row per span write: the columns of the SQLite warm tier
//	                          (sqlitestore), ORDER BY (trace_id, span_id)
//	runagain_key_events       exceptions and alerts, ORDER BY (trace_id, time_unix_nano, event_id)
//
// Rows are appended; an at-least-once retry may store a span twice, and every reader query
// collapses duplicates with LIMIT 1 BY the row's identity.
//
// # Cold tier (AggregatingMergeTree)
//
//	runagain_sessions   one partial record per session per batch; SimpleAggregateFunction
//	                    columns (min first seen, max last seen, sums, set unions of models
//	                    and trace ids) so background merges fold partials into one row per
//	                    session, and readers GROUP BY session_id to merge what is not merged yet.
//	                    Each batch (each request, also in a write the queue merged from several)
//	                    is its own insert with insert_deduplication_token = its batch id, and the
//	                    table keeps non_replicated_deduplication_window (10,000 inserts), so a
//	                    retried or re-sent request is dropped by the server.
//
// Every query the readers issue is plain SQL text with literals (no server-side parameters), so
// the same text runs on a ClickHouse server and in chDB (the tests, build tag chdb).
package clickhousestore // import "github.com/runagain/runagain/internal/store/clickhousestore"

import (
	"fmt"
	"strings"
	"time"
)

// Table names.
const (
	TableSpanSummaries = "runagain_span_summaries"
	TableKeyEvents     = "runagain_key_events"
	TableSessions      = "runagain_sessions"
)

// Schema names where the tables live and how long rows live.
type Schema struct {
	Database string        // default "default"
	Cluster  string        // ON CLUSTER name, '' for none
	WarmTTL  time.Duration // 0: no TTL
	ColdTTL  time.Duration // 0: no TTL (the cold default: forever)
}

func (s Schema) db() string {
	if s.Database == "" {
		return "default"
	}
	return s.Database
}

// Table returns the quoted `database`.`table` name.
func (s Schema) Table(name string) string { return Ident(s.db()) + "." + Ident(name) }

func (s Schema) cluster() string {
	if s.Cluster == "" {
		return ""
	}
	return " ON CLUSTER " + Ident(s.Cluster)
}

// ttl renders a TTL clause on ingested_unix_nano, or ” for 0.
func ttl(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("TTL toDateTime(intDiv(ingested_unix_nano, 1000000000)) + toIntervalSecond(%d)", int64(d/time.Second))
}

// DatabaseDDL creates the database.
func (s Schema) DatabaseDDL() string {
	return fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s%s", Ident(s.db()), s.cluster())
}

// WarmDDL creates the warm tier's tables.
func (s Schema) WarmDDL() []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  trace_id String CODEC(ZSTD(1)),
  span_id String CODEC(ZSTD(1)),
  parent_span_id String CODEC(ZSTD(1)),
  session_id String CODEC(ZSTD(1)),
  name LowCardinality(String) CODEC(ZSTD(1)),
  kind Int32,
  start_time_unix_nano Int64 CODEC(Delta(8), ZSTD(1)),
  end_time_unix_nano Int64 CODEC(Delta(8), ZSTD(1)),
  status_code Int32,
  status_message String CODEC(ZSTD(1)),
  service_name LowCardinality(String) CODEC(ZSTD(1)),
  genai_kind LowCardinality(String),
  model LowCardinality(String) CODEC(ZSTD(1)),
  input_tokens Int64,
  output_tokens Int64,
  cost_usd Float64,
  unpriced Int32,
  tool_name LowCardinality(String) CODEC(ZSTD(1)),
  agent_name LowCardinality(String) CODEC(ZSTD(1)),
  error_type LowCardinality(String) CODEC(ZSTD(1)),
  attributes String CODEC(ZSTD(3)),
  ingested_unix_nano Int64 CODEC(Delta(8), ZSTD(1)),
  INDEX idx_session session_id TYPE bloom_filter(0.01) GRANULARITY 1,
  INDEX idx_start start_time_unix_nano TYPE minmax GRANULARITY 1
) ENGINE = MergeTree
PARTITION BY toDate(toDateTime(intDiv(ingested_unix_nano, 1000000000)))
ORDER BY (trace_id, span_id)
%s
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1`, s.Table(TableSpanSummaries), s.cluster(), ttl(s.WarmTTL)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  event_id String,
  trace_id String CODEC(ZSTD(1)),
  span_id String CODEC(ZSTD(1)),
  session_id String CODEC(ZSTD(1)),
  time_unix_nano Int64 CODEC(Delta(8), ZSTD(1)),
  kind LowCardinality(String),
  name LowCardinality(String),
  severity_number Int32,
  service_name LowCardinality(String),
  message String CODEC(ZSTD(3)),
  attributes String CODEC(ZSTD(3)),
  ingested_unix_nano Int64 CODEC(Delta(8), ZSTD(1))
) ENGINE = MergeTree
PARTITION BY toDate(toDateTime(intDiv(ingested_unix_nano, 1000000000)))
ORDER BY (trace_id, time_unix_nano, event_id)
%s
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1`, s.Table(TableKeyEvents), s.cluster(), ttl(s.WarmTTL)),
	}
}

// ColdDDL creates the cold tier's table.
func (s Schema) ColdDDL() []string {
	return []string{fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  session_id String,
  first_seen_unix_nano SimpleAggregateFunction(min, Int64),
  last_seen_unix_nano SimpleAggregateFunction(max, Int64),
  agent SimpleAggregateFunction(max, String),
  service SimpleAggregateFunction(max, String),
  models SimpleAggregateFunction(groupUniqArrayArray, Array(String)),
  trace_ids SimpleAggregateFunction(groupUniqArrayArray, Array(String)),
  spans SimpleAggregateFunction(sum, Int64),
  input_tokens SimpleAggregateFunction(sum, Int64),
  output_tokens SimpleAggregateFunction(sum, Int64),
  cost_usd SimpleAggregateFunction(sum, Float64),
  unpriced SimpleAggregateFunction(sum, Int64),
  errors SimpleAggregateFunction(sum, Int64),
  alerts SimpleAggregateFunction(sum, Int64),
  partials SimpleAggregateFunction(sum, Int64),
  ingested_unix_nano SimpleAggregateFunction(max, Int64)
) ENGINE = AggregatingMergeTree
ORDER BY session_id
%s
SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 10000`, s.Table(TableSessions), s.cluster(), ttl(s.ColdTTL))}
}

// Ident quotes a ClickHouse identifier with backticks.
func Ident(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(s) + "`"
}

// Quote renders s as a ClickHouse string literal.
func Quote(s string) string {
	return "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'").Replace(s) + "'"
}
