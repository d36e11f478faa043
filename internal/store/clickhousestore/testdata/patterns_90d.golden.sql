CREATE TABLE IF NOT EXISTS `rg`.`runagain_run_patterns` ON CLUSTER `c1` (
  trace_id String CODEC(ZSTD(1)),
  session_id String CODEC(ZSTD(1)),
  pattern_id LowCardinality(String),
  variant_id LowCardinality(String),
  agent LowCardinality(String),
  signature_version UInt32,
  spans UInt64,
  events UInt64,
  version UInt64,
  ingested_unix_nano Int64 CODEC(Delta(8), ZSTD(1))
) ENGINE = ReplacingMergeTree(version)
ORDER BY trace_id
TTL toDateTime(intDiv(ingested_unix_nano, 1000000000)) + toIntervalSecond(7776000)
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS `rg`.`runagain_pattern_signatures` ON CLUSTER `c1` (
  variant_id String,
  pattern_id String,
  signature String CODEC(ZSTD(3)),
  ingested_unix_nano Int64
) ENGINE = ReplacingMergeTree(ingested_unix_nano)
ORDER BY variant_id
TTL toDateTime(intDiv(ingested_unix_nano, 1000000000)) + toIntervalSecond(7776000)
SETTINGS index_granularity = 8192;
