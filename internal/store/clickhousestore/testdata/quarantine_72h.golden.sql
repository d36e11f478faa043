CREATE TABLE IF NOT EXISTS `otel`.`runagain_quarantine` ON CLUSTER `c1` (
  id String,
  received_unix_nano Int64 CODEC(Delta(8), ZSTD(1)),
  reason LowCardinality(String),
  trace_id String CODEC(ZSTD(1)),
  span_id String CODEC(ZSTD(1)),
  name String CODEC(ZSTD(1)),
  service LowCardinality(String) CODEC(ZSTD(1)),
  otlp String CODEC(ZSTD(3))
) ENGINE = ReplacingMergeTree
ORDER BY id
TTL toDateTime(intDiv(received_unix_nano, 1000000000)) + toIntervalSecond(259200)
SETTINGS index_granularity = 8192;
