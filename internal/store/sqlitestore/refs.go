// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// # Payload references (hot file, added beside schema version 2; created on open for writing)
//
//	payload_refs: one row per payload reference URI of a stored span or log record
//	  trace_id   TEXT     as the row's trace_id ('' for a log record without one)
//	  row_id     TEXT     the span's span_id, or "log:" + the record's record_sha256
//	  prefix_id  INTEGER  payload_prefixes.id: the URI up to and including its last '/'
//	  name       TEXT     the rest of the URI
//	  primary key (trace_id, row_id, prefix_id, name)
//	payload_prefixes: id INTEGER primary key, prefix TEXT unique
//	payload_ref_uris (view): trace_id, row_id, uri = prefix || name: the K_ref value
//	  (store.SpanPayloadRefs, store.LogPayloadRefs)
//
// Version 6 splits the URI (183 characters on the bench, of which 106 name the bucket and the
// pack every reference of a pack shares); before it the table held trace_id, row_id and uri,
// and a file of that shape is converted (in one transaction, from its rows) when opened for
// writing, read as it is read-only. There is no index on the URI (version 5 dropped it: the
// payload sweep's listing of distinct URIs, once per retention pass, sorts them instead).
//
// Triggers delete a span's or record's references with it (retention, erasure), so the
// distinct URIs of payload_refs are exactly the payloads the hot tier still references: the
// live set of payload garbage collection (store.LiveRefs). A file written before the table
// existed is backfilled from the stored OTLP once, when first opened for writing.
const refsDDL = `
CREATE TABLE IF NOT EXISTS payload_prefixes (
  id     INTEGER NOT NULL PRIMARY KEY,
  prefix TEXT    NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS payload_refs (
  trace_id  TEXT    NOT NULL,
  row_id    TEXT    NOT NULL,
  prefix_id INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  PRIMARY KEY (trace_id, row_id, prefix_id, name)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS payload_ref_uris AS
  SELECT r.trace_id, r.row_id, p.prefix || r.name AS uri FROM payload_refs r JOIN payload_prefixes p ON p.id = r.prefix_id;
` + refsTriggers

const refsTriggers = `
CREATE TRIGGER IF NOT EXISTS spans_payload_refs_delete AFTER DELETE ON spans BEGIN
  DELETE FROM payload_refs WHERE trace_id = old.trace_id AND row_id = old.span_id;
END;
CREATE TRIGGER IF NOT EXISTS logs_payload_refs_delete AFTER DELETE ON logs BEGIN
  DELETE FROM payload_refs WHERE trace_id = old.trace_id AND row_id = 'log:' || old.record_sha256;
END;
`

// convertRefs turns a payload_refs table of the shape before version 6 (trace_id, row_id, uri)
// into the split one, keeping every reference. The prefix is the URI up to its last '/' (rtrim
// of every character that is not '/').
const convertRefs = `
DROP TRIGGER IF EXISTS spans_payload_refs_delete;
DROP TRIGGER IF EXISTS logs_payload_refs_delete;
DROP INDEX IF EXISTS payload_refs_uri;
ALTER TABLE payload_refs RENAME TO payload_refs_v5;
CREATE TABLE payload_prefixes (
  id     INTEGER NOT NULL PRIMARY KEY,
  prefix TEXT    NOT NULL UNIQUE
);
INSERT INTO payload_prefixes (prefix) SELECT DISTINCT rtrim(uri, replace(uri, '/', '')) FROM payload_refs_v5;
CREATE TABLE payload_refs (
  trace_id  TEXT    NOT NULL,
  row_id    TEXT    NOT NULL,
  prefix_id INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  PRIMARY KEY (trace_id, row_id, prefix_id, name)
) WITHOUT ROWID;
INSERT OR IGNORE INTO payload_refs (trace_id, row_id, prefix_id, name)
  SELECT r.trace_id, r.row_id, p.id, substr(r.uri, length(p.prefix) + 1)
  FROM payload_refs_v5 r JOIN payload_prefixes p ON p.prefix = rtrim(r.uri, replace(r.uri, '/', ''));
DROP TABLE payload_refs_v5;
`

// splitURI returns the prefix of uri (up to and including its last '/') and the rest.
func splitURI(uri string) (prefix, name string) {
	i := strings.LastIndexByte(uri, '/') + 1
	return uri[:i], uri[i:]
}

// logRowID is the payload_refs row_id of a log record.
func logRowID(recordSHA256 string) string { return "log:" + recordSHA256 }

func tableExists(db *sql.DB, name string) bool {
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return err == nil && n > 0
}

// refsShape reports the payload_refs table of db: "" (none), "uri" (before version 6) or
// "split".
func refsShape(db *sql.DB) string {
	if !tableExists(db, "payload_refs") {
		return ""
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('payload_refs') WHERE name = 'uri'`).Scan(&n); err == nil && n > 0 {
		return "uri"
	}
	return "split"
}

// ensurePayloadRefs creates payload_refs, its prefixes, view and triggers: converting a table of
// the shape before version 6, or backfilling it from the stored rows when it did not exist (a
// file written by an older build), in one transaction.
func (d *DB) ensurePayloadRefs(ctx context.Context) error {
	d.hasRefs, d.refsShape = true, "split"
	shape := refsShape(d.db)
	if shape == "split" {
		_, err := d.db.ExecContext(ctx, refsDDL) // the view and triggers, if missing
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if shape == "uri" {
		if _, err := tx.ExecContext(ctx, convertRefs+refsDDL); err != nil {
			return fmt.Errorf("convert payload_refs: %w", err)
		}
		return tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, refsDDL); err != nil {
		return fmt.Errorf("create payload_refs: %w", err)
	}
	var refs refBatch
	if err := d.eachStoredRef(ctx, tx, func(trace, row, uri string) error {
		refs.add(trace, row, uri)
		return nil
	}); err != nil {
		return fmt.Errorf("backfill payload_refs: %w", err)
	}
	if err := d.flushRefs(ctx, tx, &refs); err != nil {
		return fmt.Errorf("backfill payload_refs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.committedRefs(&refs)
	return nil
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
	type spanRow struct {
		trace, span   string
		codec, dictID int64
		buf           []byte
	}
	var spans []spanRow // read before decoding: a span frame is read with q
	for rows.Next() {
		var r spanRow
		if err := rows.Scan(&r.trace, &r.span, &r.codec, &r.dictID, &r.buf); err != nil {
			rows.Close()
			return err
		}
		spans = append(spans, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var um ptrace.ProtoUnmarshaler
	fr := frameReader{c: d.codec, q: q}
	for _, r := range spans {
		raw, err := fr.span(ctx, r.codec, r.dictID, r.buf)
		if err != nil {
			continue // an undecodable row references nothing we can name
		}
		td, err := um.UnmarshalTraces(raw)
		if err != nil {
			continue // an undecodable row references nothing we can name
		}
		store.EachSpan(td, func(s ptrace.Span) {
			for _, u := range store.SpanPayloadRefs(s) {
				refs = append(refs, ref{r.trace, r.span, u})
			}
		})
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
	q := `SELECT DISTINCT uri FROM payload_ref_uris ORDER BY uri`
	if d.refsShape == "uri" { // a file before version 6, read-only
		q = `SELECT DISTINCT uri FROM payload_refs ORDER BY uri`
	}
	rows, err := d.db.QueryContext(ctx, q)
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

// refBatch collects the payload references of one transaction's rows (spans, log records, a
// backfill) and inserts them (DB.flushRefs) with multi-row INSERTs of bound parameters, so a
// URI is stored byte for byte (invalid UTF-8 included). Each prefix's id is looked up once: in
// the ids this transaction resolved, then in the DB's cache of committed ids (prefixIDs), else
// inserted or read from payload_prefixes.
type refBatch struct {
	rows []refRow
	// ids are the prefix ids resolved in this transaction: known to the DB's cache only once
	// the transaction commits (committedRefs), since a rolled back insert's id may be reused.
	ids  map[string]int64
	args []any
}

type refRow struct{ trace, row, prefix, name string }

func (b *refBatch) add(trace, row, uri string) {
	p, name := splitURI(uri)
	b.rows = append(b.rows, refRow{trace, row, p, name})
}

// prefixIDsSize bounds the DB's cache of payload_prefixes ids (one prefix per pack on the
// bench's references: 4,096 of them are 64 GiB of packs at 16 MiB).
const prefixIDsSize = 4096

// prefixID returns the payload_prefixes id of prefix p in tx.
func (d *DB) prefixID(ctx context.Context, tx *sql.Tx, b *refBatch, p string) (int64, error) {
	if id, ok := b.ids[p]; ok {
		return id, nil
	}
	if id, ok := d.prefixIDs.Get(p); ok {
		return id, nil
	}
	st, err := d.stmts.stmt(ctx, tx, stmtPrefix)
	if err != nil {
		return 0, err
	}
	var id int64
	if err := st.QueryRowContext(ctx, p).Scan(&id); err != nil {
		return 0, err
	}
	if b.ids == nil {
		b.ids = map[string]int64{}
	}
	b.ids[p] = id
	return id, nil
}

// flushRefs inserts the references collected in b in tx and empties b.rows.
func (d *DB) flushRefs(ctx context.Context, tx *sql.Tx, b *refBatch) error {
	for rows := b.rows; len(rows) > 0; {
		n := chunkRows(len(rows))
		st, err := d.stmts.stmt(ctx, tx, stmtRefs(n))
		if err != nil {
			return err
		}
		b.args = b.args[:0]
		for _, r := range rows[:n] {
			id, err := d.prefixID(ctx, tx, b, r.prefix)
			if err != nil {
				return err
			}
			b.args = append(b.args, r.trace, r.row, id, r.name)
		}
		if _, err := st.ExecContext(ctx, b.args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	b.rows = b.rows[:0]
	return nil
}

// committedRefs records the prefix ids b's transaction resolved, once it committed.
func (d *DB) committedRefs(b *refBatch) {
	for p, id := range b.ids {
		d.prefixIDs.Add(p, id)
	}
	clear(b.ids)
}
