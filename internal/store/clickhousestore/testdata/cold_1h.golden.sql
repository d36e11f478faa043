CREATE TABLE IF NOT EXISTS `default`.`runagain_sessions` (
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
TTL toDateTime(intDiv(ingested_unix_nano, 1000000000)) + toIntervalSecond(3600)
SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 10000;
