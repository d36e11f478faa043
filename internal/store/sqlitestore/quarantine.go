// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// quarantineDDL is the hot tier's dead-letter table (store.QuarantinedSpan), created by a
// writer's first Quarantine; readers of a file without it list nothing.
const quarantineDDL = `CREATE TABLE IF NOT EXISTS quarantine (
  id                 TEXT    PRIMARY KEY, -- hex SHA-256 of reason and otlp
  received_unix_nano INTEGER NOT NULL,
  reason             TEXT    NOT NULL,
  trace_id           TEXT    NOT NULL,
  span_id            TEXT    NOT NULL,
  name               TEXT    NOT NULL,
  service            TEXT    NOT NULL,
  otlp               TEXT    NOT NULL  -- OTLP JSON TracesData: the span, its resource and scope
)`

// Quarantine stores spans in the dead-letter table, in one transaction; a span already there
// (same ID) is kept once.
func (d *DB) Quarantine(ctx context.Context, spans []store.QuarantinedSpan) error {
	if len(spans) == 0 {
		return nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite hot tier: quarantine: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, quarantineDDL); err != nil {
		return fmt.Errorf("sqlite hot tier: quarantine: %w", err)
	}
	for _, s := range spans {
		if _, err := tx.ExecContext(ctx, `INSERT INTO quarantine (id, received_unix_nano, reason, trace_id, span_id, name, service, otlp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			s.ID, s.Received.UnixNano(), s.Reason, s.TraceID, s.SpanID, s.Name, s.Service, s.OTLP); err != nil {
			return fmt.Errorf("sqlite hot tier: quarantine: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite hot tier: quarantine: %w", err)
	}
	return nil
}

// Quarantined lists the dead-letter table newest first, at most limit rows (0: all).
func (d *DB) Quarantined(ctx context.Context, limit int) ([]store.QuarantinedSpan, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quarantine'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := d.db.QueryContext(ctx, `SELECT id, received_unix_nano, reason, trace_id, span_id, name, service, otlp
		FROM quarantine ORDER BY received_unix_nano DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite hot tier: quarantine: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.QuarantinedSpan
	for rows.Next() {
		var s store.QuarantinedSpan
		var ns int64
		if err := rows.Scan(&s.ID, &ns, &s.Reason, &s.TraceID, &s.SpanID, &s.Name, &s.Service, &s.OTLP); err != nil {
			return nil, err
		}
		s.Received = time.Unix(0, ns).UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}
