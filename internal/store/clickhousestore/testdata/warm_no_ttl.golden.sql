CREATE TABLE IF NOT EXISTS `default`.`runagain_span_summaries` (
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

SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS `default`.`runagain_key_events` (
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

SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;
