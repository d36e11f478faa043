// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"fmt"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// TableQuarantine is the hot tier's dead-letter table on ClickHouse (store.QuarantinedSpan),
// in the hot tier's database beside the contrib exporter's otel_traces.
const TableQuarantine = "runagain_quarantine"

// QuarantineColumns is the insert column list of runagain_quarantine.
const QuarantineColumns = `id, received_unix_nano, reason, trace_id, span_id, name, service, otlp`

// QuarantineDDL creates the dead-letter table: a ReplacingMergeTree ordered by the span's id
// (the hex SHA-256 of its reason and OTLP JSON), so a retried request's spans fold into one row
// in the background and readers collapse what is not merged yet (LIMIT 1 BY id). ttl (0: none)
// is the hot retention, counted from when the span was received.
func (s Schema) QuarantineDDL(ttl time.Duration) string {
	clause := ""
	if ttl > 0 {
		clause = fmt.Sprintf("TTL toDateTime(intDiv(received_unix_nano, 1000000000)) + toIntervalSecond(%d)", int64(ttl/time.Second))
	}
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
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
%s
SETTINGS index_granularity = 8192`, s.Table(TableQuarantine), s.cluster(), clause)
}

// CreateQuarantine creates the database and the dead-letter table (ttl: the hot retention).
func (w *Writer) CreateQuarantine(ctx context.Context, ttl time.Duration) error {
	return w.exec(ctx, []string{w.Schema.DatabaseDDL(), w.Schema.QuarantineDDL(ttl)})
}

// Quarantine inserts spans into the dead-letter table in one insert; a span already there (same
// ID) is kept once (the table replaces by id, readers collapse by id). Errors name the table.
func (w *Writer) Quarantine(ctx context.Context, spans []store.QuarantinedSpan) error {
	rows := make([][]any, len(spans))
	for i, s := range spans {
		rows[i] = []any{s.ID, s.Received.UnixNano(), s.Reason, s.TraceID, s.SpanID, s.Name, s.Service, s.OTLP}
	}
	return w.insert(ctx, TableQuarantine, QuarantineColumns, rows)
}

// Quarantined lists the dead-letter table in schema's database newest first, each span once, at
// most limit rows (0: all). A database or table that does not exist (nothing quarantined yet)
// lists nothing.
func Quarantined(ctx context.Context, db Querier, schema Schema, limit int) ([]store.QuarantinedSpan, error) {
	lim := ""
	if limit > 0 {
		lim = fmt.Sprintf("\nLIMIT %d", limit)
	}
	q := fmt.Sprintf(`SELECT %s FROM (
  SELECT %s FROM %s ORDER BY id, received_unix_nano LIMIT 1 BY id
) ORDER BY received_unix_nano DESC, id%s`, QuarantineColumns, QuarantineColumns, schema.Table(TableQuarantine), lim)
	rows, err := db.QueryContext(ctx, q)
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: quarantine: %w", err)
	}
	defer rows.Close()
	var out []store.QuarantinedSpan
	for rows.Next() {
		var s store.QuarantinedSpan
		var ns int64
		if err := rows.Scan(&s.ID, &ns, &s.Reason, &s.TraceID, &s.SpanID, &s.Name, &s.Service, &s.OTLP); err != nil {
			return nil, fmt.Errorf("clickhouse hot tier: quarantine: %w", err)
		}
		s.Received = time.Unix(0, ns).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		if MissingTable(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("clickhouse hot tier: quarantine: %w", err)
	}
	return out, nil
}
