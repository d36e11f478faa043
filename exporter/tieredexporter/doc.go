// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package tieredexporter implements the `tiered` exporter: runagain's storage for agent runs,
// in tiers (docs/architecture.md "Storage tiers"). Each tier is optional, configured on its own, and has its
// own exporterhelper sending queue, retry and timeout, so one tier's outage never blocks another.
//
//   - hot: full spans and log records; SQLite (schema in internal/store/sqlitestore) or
//     ClickHouse through the contrib clickhouseexporter, created from its factory with its
//     configuration nested unchanged and its TTL set from the hot retention.
//   - warm: span summaries and key events, no payloads; SQLite or ClickHouse
//     (internal/store/clickhousestore).
//   - cold: one partial session record per session per batch; Parquet on blob storage
//     (internal/store/coldstore) or a ClickHouse AggregatingMergeTree table.
//
// Retention is measured from ingestion; a janitor enforces it on SQLite and blob backends,
// ClickHouse tables use TTL. See README.md.
package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"
