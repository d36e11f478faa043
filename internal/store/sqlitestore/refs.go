package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// # Payload references (hot file, added beside schema version 2; created on open for writing)
//
//	payload_refs: one row per payload reference URI of a stored span or log record
//	  trace_id   TEXT  as the row's trace_id ('' for a log record without one)
//	  row_id     TEXT  the span's span_id, or "log:" + the record's record_sha256
//	  uri        TEXT  the K_ref value (store.SpanPayloadRefs, store.LogPayloadRefs)
//	  primary key (trace_id, row_id, uri); no index on uri (version 5 dropped it: the payload
//	  sweep's listing of distinct URIs, once per retention pass, sorts them instead)
//
// Triggers delete a span's or record's references with it (retention, erasure), so the
// distinct URIs of payload_refs are exactly the payloads the hot tier still references: the
// live set of payload garbage collection (store.LiveRefs). A file written before the table
// existed is backfilled from the stored OTLP once, when first opened for writing.
const refsDDL = `
CREATE TABLE IF NOT EXISTS payload_refs (
  trace_id TEXT NOT NULL,
  row_id   TEXT NOT NULL,
  uri      TEXT NOT NULL,
  PRIMARY KEY (trace_id, row_id, uri)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS spans_payload_refs_delete AFTER DELETE ON spans BEGIN
  DELETE FROM payload_refs WHERE trace_id = old.trace_id AND row_id = old.span_id;
END;
CREATE TRIGGER IF NOT EXISTS logs_payload_refs_delete AFTER DELETE ON logs BEGIN
  DELETE FROM payload_refs WHERE trace_id = old.trace_id AND row_id = 'log:' || old.record_sha256;
END;
`

const insertRef = `INSERT OR IGNORE INTO payload_refs (trace_id, row_id, uri) VALUES (?,?,?)`

// logRowID is the payload_refs row_id of a log record.
func logRowID(recordSHA256 string) string { return "log:" + recordSHA256 }

func tableExists(db *sql.DB, name string) bool {
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return err == nil && n > 0
}

// ensurePayloadRefs creates payload_refs and its triggers, backfilling it from the stored rows
// when the table did not exist (a file written by an older build), in one transaction.
func (d *DB) ensurePayloadRefs(ctx context.Context) error {
	d.hasRefs = true
	if tableExists(d.db, "payload_refs") {
		_, err := d.db.ExecContext(ctx, refsDDL) // the triggers, if an older build created only the table
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, refsDDL); err != nil {
		return fmt.Errorf("create payload_refs: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, insertRef)
	if err != nil {
		return err
	}
	defer ins.Close()
	if err := d.eachStoredRef(ctx, tx, func(trace, row, uri string) error {
		_, err := ins.ExecContext(ctx, trace, row, uri)
		return err
	}); err != nil {
		return fmt.Errorf("backfill payload_refs: %w", err)
	}
	return tx.Commit()
}

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// eachStoredRef decodes every stored span and log record and calls f with each payload
// reference (the scan payload_refs replaces).
func (d *DB) eachStoredRef(ctx context.Context, q querier, f func(trace, row, uri string) error) error {
	type ref struct{ trace, row, uri string }
	var refs []ref // collected first: f may write to the database the rows are read from
	rows, err := q.QueryContext(ctx, `SELECT trace_id, span_id, `+d.otlpCols()+` FROM spans`)
	if err != nil {
		return err
	}
	var um ptrace.ProtoUnmarshaler
	for rows.Next() {
		var trace, span string
		var codec, dictID int64
		var buf []byte
		if err := rows.Scan(&trace, &span, &codec, &dictID, &buf); err != nil {
			rows.Close()
			return err
		}
		raw, err := d.codec.decode(ctx, codec, dictID, buf)
		if err != nil {
			continue // an undecodable row references nothing we can name
		}
		td, err := um.UnmarshalTraces(raw)
		if err != nil {
			continue // an undecodable row references nothing we can name
		}
		store.EachSpan(td, func(s ptrace.Span) {
			for _, u := range store.SpanPayloadRefs(s) {
				refs = append(refs, ref{trace, span, u})
			}
		})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	lrows, err := q.QueryContext(ctx, `SELECT trace_id, `+d.otlpCols()+` FROM logs`)
	if err != nil {
		return err
	}
	var lum plog.ProtoUnmarshaler
	for lrows.Next() {
		var trace string
		var codec, dictID int64
		var buf []byte
		if err := lrows.Scan(&trace, &codec, &dictID, &buf); err != nil {
			lrows.Close()
			return err
		}
		raw, err := d.codec.decode(ctx, codec, dictID, buf)
		if err != nil {
			continue
		}
		ld, err := lum.UnmarshalLogs(raw)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(raw)
		store.EachLogRecord(ld, func(lr plog.LogRecord) {
			for _, u := range store.LogPayloadRefs(lr) {
				refs = append(refs, ref{trace, logRowID(hex.EncodeToString(sum[:])), u})
			}
		})
	}
	lrows.Close()
	if err := lrows.Err(); err != nil {
		return err
	}
	for _, r := range refs {
		if err := f(r.trace, r.row, r.uri); err != nil {
			return err
		}
	}
	return nil
}

// EachPayloadRef implements store.RefLister: every distinct payload reference URI of the stored
// spans and log records, in URI order, from payload_refs (a file without it, opened read-only,
// is scanned). yield must not use this DB.
func (d *DB) EachPayloadRef(ctx context.Context, yield func(uri string) bool) error {
	if !d.hasRefs {
		seen := map[string]bool{}
		stop := false
		return d.eachStoredRef(ctx, d.db, func(_, _, uri string) error {
			if !stop && !seen[uri] {
				seen[uri] = true
				stop = !yield(uri)
			}
			return nil
		})
	}
	rows, err := d.db.QueryContext(ctx, `SELECT DISTINCT uri FROM payload_refs ORDER BY uri`)
	if err != nil {
		return fmt.Errorf("sqlite hot tier: list payload references: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var uri string
		if err := rows.Scan(&uri); err != nil {
			return err
		}
		if !yield(uri) {
			return nil
		}
	}
	return rows.Err()
}

var _ store.RefLister = (*DB)(nil)
