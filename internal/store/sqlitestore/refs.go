package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

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

// refWriter adds payload references in one transaction, resolving each prefix once per
// transaction (a prefix id learnt in a transaction that rolls back is never used again).
type refWriter struct {
	ins, prefix *sql.Stmt
	ids         map[string]int64
}

func newRefWriter(ctx context.Context, tx *sql.Tx) (*refWriter, error) {
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO payload_refs (trace_id, row_id, prefix_id, name) VALUES (?,?,?,?)`)
	if err != nil {
		return nil, err
	}
	prefix, err := tx.PrepareContext(ctx, `INSERT INTO payload_prefixes (prefix) VALUES (?)
	  ON CONFLICT (prefix) DO UPDATE SET prefix = excluded.prefix RETURNING id`)
	if err != nil {
		ins.Close()
		return nil, err
	}
	return &refWriter{ins: ins, prefix: prefix, ids: map[string]int64{}}, nil
}

func (w *refWriter) add(ctx context.Context, trace, row, uri string) error {
	p, name := splitURI(uri)
	id, ok := w.ids[p]
	if !ok {
		if err := w.prefix.QueryRowContext(ctx, p).Scan(&id); err != nil {
			return err
		}
		w.ids[p] = id
	}
	_, err := w.ins.ExecContext(ctx, trace, row, id, name)
	return err
}

func (w *refWriter) close() {
	w.ins.Close()
	w.prefix.Close()
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
	w, err := newRefWriter(ctx, tx)
	if err != nil {
		return err
	}
	defer w.close()
	if err := d.eachStoredRef(ctx, tx, func(trace, row, uri string) error {
		return w.add(ctx, trace, row, uri)
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

// refBatch collects the payload references of a transaction's span rows and inserts them with
// two statements (flush) instead of one per reference: the prefixes missing from
// payload_prefixes, then every reference joined to its prefix's id.
type refBatch struct {
	rows     [][4]string // trace, row, prefix, name
	prefixes []string
	seen     map[string]bool
	// bound holds the references that are not valid UTF-8: JSON would replace their invalid
	// bytes (U+FFFD), so they are inserted with bound parameters, byte for byte.
	bound [][4]string
}

func (b *refBatch) add(trace, row, uri string) {
	p, name := splitURI(uri)
	if !utf8.ValidString(uri) {
		b.bound = append(b.bound, [4]string{trace, row, p, name})
		return
	}
	if !b.seen[p] {
		if b.seen == nil {
			b.seen = map[string]bool{}
		}
		b.seen[p] = true
		b.prefixes = append(b.prefixes, p)
	}
	b.rows = append(b.rows, [4]string{trace, row, p, name})
}

// flush inserts the collected references in tx and empties b.
func (b *refBatch) flush(ctx context.Context, tx *sql.Tx) error {
	for _, r := range b.bound {
		if _, err := tx.ExecContext(ctx, `INSERT INTO payload_prefixes (prefix) VALUES (?) ON CONFLICT (prefix) DO NOTHING`, r[2]); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO payload_refs (trace_id, row_id, prefix_id, name)
		  SELECT ?, ?, id, ? FROM payload_prefixes WHERE prefix = ?`, r[0], r[1], r[3], r[2]); err != nil {
			return err
		}
	}
	b.bound = b.bound[:0]
	if len(b.rows) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payload_prefixes (prefix) SELECT value FROM json_each(?) WHERE true
	  ON CONFLICT (prefix) DO NOTHING`, jsonArg(b.prefixes)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO payload_refs (trace_id, row_id, prefix_id, name)
	  SELECT j.value->>0, j.value->>1, p.id, j.value->>3 FROM json_each(?) AS j JOIN payload_prefixes AS p ON p.prefix = j.value->>2`,
		jsonArg(b.rows)); err != nil {
		return err
	}
	b.rows, b.prefixes = b.rows[:0], b.prefixes[:0]
	clear(b.seen)
	return nil
}
