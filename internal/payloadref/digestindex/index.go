// SPDX-License-Identifier: Apache-2.0

// Package digestindex is the persistent digest index of the pack layout (SQLite in WAL mode,
// Dir/payload-index.db, shared by the collector and the CLI): which pack holds an object, when it
// was last referenced, the packs and their state, and the collect generation that orders writer
// Commits against a Collect's mark (BeginCollect, TouchDue); with a Bloom filter of every indexed
// digest in front (MayHave: a new object costs no SQLite lookup). The writer and collect call it
// through its exported methods; it imports only packages ref and packfile.
package digestindex

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"modernc.org/sqlite" // database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// IndexFile is the name of the digest index in a Store's data directory.
const IndexFile = "payload-index.db"

// Index is the persistent digest index: one row per object written to a pack (digest and kind ->
// pack number, last time a value referenced it), and one row per pack (its id, staged or
// uploaded, size). It is a SQLite file in WAL mode, so the collector (writing) and the CLI
// (collecting or erasing) use it at once; busy_timeout serialises their writes, and every
// transaction takes the write lock when it begins (BEGIN IMMEDIATE): a transaction that reads
// and then writes never fails on a snapshot another connection moved meanwhile.
//
// A writer's index also holds a Bloom filter of every digest it lists (see filter.go): a
// lookup the filter answers "absent" does not reach SQLite.
type Index struct {
	db *sql.DB
	// Statements of the request path, prepared once.
	genStmt, lookupStmt *sql.Stmt
	filter
	// built is how many rows the last buildFilter read (the count at open, without another
	// scan of the table: see Store.StatsAtOpen). Written before the indexer starts and by it.
	built atomic.Int64
}

// SchemaVersion is meta.schema. Version 2 names packs by their number in objects rows
// (version 1 repeated the pack id's text and the frame's offset and length, which nothing read,
// in every row, and indexed objects by pack).
const SchemaVersion = "2"

// packsTable is the packs table of schema 2 (as NAME). Pack numbers are never reused
// (AUTOINCREMENT): a row left naming a deleted pack can never name a later one.
const packsTable = `(
	n        INTEGER PRIMARY KEY AUTOINCREMENT, -- objects.pack
	id       TEXT    NOT NULL UNIQUE,
	uploaded INTEGER NOT NULL, -- 0 staged, 1 in the bucket
	size     INTEGER NOT NULL,
	created  INTEGER NOT NULL
)`

// objectsTable is the objects table of schema 2 (as NAME).
const objectsTable = `(
	digest   BLOB    NOT NULL,
	manifest INTEGER NOT NULL,
	pack     INTEGER NOT NULL, -- packs.n
	last_ref INTEGER NOT NULL, -- unix nanoseconds: indexed, or touched by a dedup hit (see Batch)
	PRIMARY KEY (digest, manifest)
) WITHOUT ROWID`

const indexSchema = `CREATE TABLE IF NOT EXISTS packs ` + packsTable + `;
CREATE TABLE IF NOT EXISTS objects ` + objectsTable + `;`

// migrateV1 rewrites a version 1 index (pack id text and frame location in every objects row)
// into version 2, in one transaction. Packs that only objects rows name (staged when the index
// was written) get a packs row, as staged.
const migrateV1 = `CREATE TABLE packs2 ` + packsTable + `;
INSERT INTO packs2 (id, uploaded, size, created) SELECT id, uploaded, size, created FROM packs ORDER BY created;
INSERT OR IGNORE INTO packs2 (id, uploaded, size, created) SELECT DISTINCT pack, 0, 0, 0 FROM objects;
CREATE TABLE objects2 ` + objectsTable + `;
INSERT INTO objects2 (digest, manifest, pack, last_ref)
	SELECT o.digest, o.manifest, p.n, o.last_ref FROM objects o JOIN packs2 p ON p.id = o.pack;
DROP TABLE objects;
DROP TABLE packs;
ALTER TABLE packs2 RENAME TO packs;
ALTER TABLE objects2 RENAME TO objects;
`

// Open opens (creating) the index at path for the bucket bucketURL. An index built for
// another bucket is emptied by a writer (its locations would name packs the new bucket does not
// hold); a collector (keep) refuses it instead, naming both buckets.
func Open(ctx context.Context, path, bucketURL string, keep bool) (*Index, error) {
	// Openers that create the file at the same moment (the processor and the storage extension's
	// sweep at start, or the CLI) can meet SQLITE_BUSY that the busy timeout does not cover
	// (switching a new file to WAL takes an exclusive lock at once): retried for up to 10 s.
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = 10 * time.Millisecond
	return backoff.Retry(ctx, func() (*Index, error) {
		x, err := openIndexOnce(ctx, path, bucketURL, keep)
		var se *sqlite.Error
		if err != nil && !(errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY) {
			return nil, backoff.Permanent(err)
		}
		return x, err
	}, backoff.WithBackOff(eb), backoff.WithMaxElapsedTime(10*time.Second))
}

// openIndexOnce is one attempt of Open.
func openIndexOnce(ctx context.Context, path, bucketURL string, keep bool) (*Index, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// The statement journal of the indexer's multi-row upserts in memory: in a temporary file it
	// was a write syscall per page (a tenth of the index's CPU).
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	if err := migrateIndex(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	// The first opener records the bucket. Several open a new index at once (the collector's
	// processor and the storage extension's sweep at start, or the CLI), so the row is inserted
	// only if absent and then read back: whoever won, every opener compares against it.
	var cur string
	_, err = db.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('bucket', ?) ON CONFLICT (k) DO NOTHING`, bucketURL)
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'bucket'`).Scan(&cur)
	}
	switch {
	case err != nil:
	case cur != bucketURL && keep:
		err = fmt.Errorf("it indexes bucket %s, not %s", cur, bucketURL)
	case cur != bucketURL:
		_, err = db.ExecContext(ctx, `DELETE FROM objects; DELETE FROM packs; UPDATE meta SET v = ? WHERE k = 'bucket'`, bucketURL)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	x := &Index{db: db}
	if x.genStmt, err = db.PrepareContext(ctx, `SELECT k, CAST(v AS INTEGER) FROM meta WHERE k IN ('gen', 'gen_time')`); err == nil {
		x.lookupStmt, err = db.PrepareContext(ctx, `SELECT p.id FROM objects o JOIN packs p ON p.n = o.pack WHERE o.digest = ? AND o.manifest = ?`)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	return x, nil
}

// Close closes the index's statements and database.
func (x *Index) Close() error {
	_ = x.genStmt.Close()
	_ = x.lookupStmt.Close()
	return x.db.Close()
}

// migrateIndex creates the schema, or migrates a version 1 index to version 2 (see migrateV1),
// in one transaction; a migrated file is vacuumed to give the space back.
func migrateIndex(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		return err
	}
	var v1 int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('objects') WHERE name = 'off'`).Scan(&v1); err != nil {
		return err
	}
	if v1 > 0 {
		if _, err := tx.ExecContext(ctx, migrateV1); err != nil {
			return fmt.Errorf("migrating to schema %s: %w", SchemaVersion, err)
		}
	}
	if _, err := tx.ExecContext(ctx, indexSchema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('schema', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, SchemaVersion); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if v1 > 0 {
		_, err = db.ExecContext(ctx, `VACUUM`)
	}
	return err
}

// Lookup returns the pack holding k, or "" when the index has no row for it.
func (x *Index) Lookup(ctx context.Context, k ref.Object) (string, error) {
	var pack string
	err := x.lookupStmt.QueryRowContext(ctx, k.Sum[:], k.Manifest).Scan(&pack)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return pack, err
}

// readGeneration returns, through q (genStmt, or genStmt within a transaction), the collect generation (meta 'gen': how many Collects
// began on this index; 0 before the first) and the latest mark start of those Collects (meta
// 'gen_time', unix nanoseconds). See Batch for how writers use them.
func readGeneration(ctx context.Context, q *sql.Stmt) (gen, markStart int64, err error) {
	rows, err := q.QueryContext(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return 0, 0, err
		}
		if k == "gen" {
			gen = v
		} else {
			markStart = v
		}
	}
	return gen, markStart, rows.Err()
}

// BeginCollect moves the collect generation on and returns the mark start, read from now inside
// the transaction (under the write lock), recorded as gen_time (the latest mark start of the
// Collects that began). The mark begins when this transaction commits (see Batch).
func (x *Index) BeginCollect(ctx context.Context, now func() time.Time) (time.Time, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return time.Time{}, err
	}
	defer func() { _ = tx.Rollback() }()
	// Any statement of an immediate transaction runs under the write lock; read the clock
	// after the first.
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('gen', 1) ON CONFLICT (k) DO UPDATE SET v = CAST(v AS INTEGER) + 1`); err != nil {
		return time.Time{}, err
	}
	markStart := now()
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('gen_time', ?1) ON CONFLICT (k) DO UPDATE SET v = max(CAST(v AS INTEGER), ?1)`,
		markStart.UnixNano()); err != nil {
		return time.Time{}, err
	}
	return markStart, tx.Commit()
}

// Insert records objects appended to packs (already durable in their staged pack), in one
// transaction, with last_ref = ts = max(now, gen_time) read in it; gen is the collect generation
// read in it. A pack gets its packs row (as staged) with its first object.
func (x *Index) Insert(ctx context.Context, added []packfile.EntryAt, now func() time.Time) (gen, ts int64, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = tx.Rollback() }()
	gen, markStart, err := readGeneration(ctx, tx.StmtContext(ctx, x.genStmt))
	if err != nil {
		return 0, 0, err
	}
	t := now()
	ts = max(t.UnixNano(), markStart)
	packs := map[string]int64{}
	for _, a := range added {
		if _, ok := packs[a.Pack]; ok {
			continue
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO packs (id, uploaded, size, created) VALUES (?, 0, 0, ?)
			ON CONFLICT (id) DO UPDATE SET id = excluded.id RETURNING n`, a.Pack, t.UnixNano()).Scan(&n); err != nil {
			return 0, 0, err
		}
		packs[a.Pack] = n
	}
	// In key order (the B-tree's: neighbouring rows share pages) and insertRows rows per
	// statement: one statement per row was most of the indexer's CPU.
	rows := slices.Clone(added)
	slices.SortStableFunc(rows, func(a, b packfile.EntryAt) int { // stable: of two rows of one object, the later wins as before
		if c := bytes.Compare(a.Sum[:], b.Sum[:]); c != 0 {
			return c
		}
		return boolCmp(a.Manifest, b.Manifest)
	})
	var full *sql.Stmt
	args := make([]any, 0, 4*insertRows)
	for len(rows) > 0 {
		n := min(len(rows), insertRows)
		st := full
		if n < insertRows || full == nil {
			if st, err = tx.PrepareContext(ctx, insertObjectsSQL(n)); err != nil {
				return 0, 0, err
			}
			if n == insertRows {
				full = st
				defer func() { _ = full.Close() }()
			}
		}
		args = args[:0]
		for _, a := range rows[:n] {
			args = append(args, a.Sum[:], a.Manifest, packs[a.Pack], ts)
		}
		_, err := st.ExecContext(ctx, args...)
		if st != full {
			_ = st.Close()
		}
		if err != nil {
			return 0, 0, err
		}
		rows = rows[n:]
	}
	return gen, ts, tx.Commit()
}

// insertRows is how many objects rows one INSERT statement of index.insert writes (4 parameters
// each, within SQLite's default limit of 32766).
const insertRows = 128

// insertObjectsSQL is the INSERT of n objects rows (digest, manifest, pack, last_ref); a row
// already present takes the new pack and the later last_ref.
func insertObjectsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO objects (digest, manifest, pack, last_ref) VALUES `)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?)`)
	}
	b.WriteString(` ON CONFLICT (digest, manifest) DO UPDATE SET pack = excluded.pack, last_ref = max(last_ref, excluded.last_ref)`)
	return b.String()
}

// TouchDue runs one writer Commit's index step: it reads the collect generation and the latest
// mark start (one read, no lock), asks due which references to touch at that generation, and
// sets their last_ref to ts = max(now, mark start) in one transaction. It returns the due
// references whose row is gone or names another pack (collected meanwhile), the generation and
// ts.
func (x *Index) TouchDue(ctx context.Context, due func(gen int64) []ref.Location, now func() time.Time) (stale []ref.Location, gen, ts int64, err error) {
	gen, markStart, err := readGeneration(ctx, x.genStmt)
	if err != nil {
		return nil, 0, 0, err
	}
	ts = max(now().UnixNano(), markStart)
	hits := due(gen)
	if len(hits) == 0 {
		return nil, gen, ts, nil
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `UPDATE objects SET last_ref = max(last_ref, ?) WHERE digest = ? AND manifest = ?
		AND pack = (SELECT n FROM packs WHERE id = ?)`)
	if err != nil {
		return nil, 0, 0, err
	}
	defer func() { _ = st.Close() }()
	for _, h := range hits {
		r, err := st.ExecContext(ctx, ts, h.Sum[:], h.Manifest, h.Pack)
		if err != nil {
			return nil, 0, 0, err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			stale = append(stale, h)
		}
	}
	return stale, gen, ts, tx.Commit()
}

// SetPack records a pack's state (staged or uploaded) and size.
func (x *Index) SetPack(ctx context.Context, id string, uploaded bool, size int64, created time.Time) error {
	_, err := x.db.ExecContext(ctx, `INSERT INTO packs (id, uploaded, size, created) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET uploaded = excluded.uploaded, size = excluded.size`, id, uploaded, size, created.UnixNano())
	return err
}

// ObjectCount is the number of objects indexed.
func (x *Index) ObjectCount(ctx context.Context) (int64, error) {
	var n int64
	err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM objects`).Scan(&n)
	return n, err
}

// RowReader is what RefStates reads through: the index's database, or a transaction of it.
type RowReader interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// RefStates reads, through q, the rows of the dead objects of pack that name it: kept are those
// referenced at or after their cutoff (a writer deduplicated against them after the mark began,
// or within the grace), unindexed those without such a row (nothing finds that copy through the
// index). n is the pack's number (-1: no packs row names it).
func RefStates(ctx context.Context, q RowReader, pack string, dead []ref.Object, cutoff func(ref.Object) time.Time) (kept, unindexed map[ref.Object]bool, n int64, err error) {
	kept, unindexed = map[ref.Object]bool{}, map[ref.Object]bool{}
	err = q.QueryRowContext(ctx, `SELECT n FROM packs WHERE id = ?`, pack).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		n = -1
	} else if err != nil {
		return nil, nil, 0, err
	}
	sel, err := q.PrepareContext(ctx, `SELECT last_ref FROM objects WHERE digest = ? AND manifest = ? AND pack = ?`)
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() { _ = sel.Close() }()
	for _, k := range dead {
		var last int64
		err := sel.QueryRowContext(ctx, k.Sum[:], k.Manifest, n).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			unindexed[k] = true
			continue
		}
		if err != nil {
			return nil, nil, 0, err
		}
		if last >= cutoff(k).UnixNano() {
			kept[k] = true
		}
	}
	return kept, unindexed, n, nil
}

// DeleteRows deletes, in tx, the rows of keys naming pack number n.
func DeleteRows(ctx context.Context, tx *sql.Tx, n int64, keys []ref.Object) error {
	if len(keys) == 0 {
		return nil
	}
	del, err := tx.PrepareContext(ctx, `DELETE FROM objects WHERE digest = ? AND manifest = ? AND pack = ?`)
	if err != nil {
		return err
	}
	defer func() { _ = del.Close() }()
	for _, k := range keys {
		if _, err := del.ExecContext(ctx, k.Sum[:], k.Manifest, n); err != nil {
			return err
		}
	}
	return nil
}

// Moved records a pack's new size after it was rewritten, or drops the pack's rows (its objects
// listed in entries, and its own) when it was deleted.
func (x *Index) Moved(ctx context.Context, pack string, entries []packfile.Entry, deleted bool, size int64) error {
	if !deleted {
		_, err := x.db.ExecContext(ctx, `UPDATE packs SET size = ? WHERE id = ?`, size, pack)
		return err
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	del, err := tx.PrepareContext(ctx, `DELETE FROM objects WHERE digest = ? AND manifest = ? AND pack = (SELECT n FROM packs WHERE id = ?)`)
	if err != nil {
		return err
	}
	defer func() { _ = del.Close() }()
	for _, e := range entries {
		if _, err := del.ExecContext(ctx, e.Sum[:], e.Manifest, pack); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM packs WHERE id = ?`, pack); err != nil {
		return err
	}
	return tx.Commit()
}

// TouchWindow is how long a dedup hit may go without updating its object's last-referenced time
// in the index: a Batch touches a hit only when the writer has not touched (or indexed) it for
// TouchWindow, or when a Collect began since (see Batch). Collect keeps objects last referenced
// within opts.Grace plus TouchWindow before its mark began, so that the coarser touch never
// shortens the grace (see collect.Options.Grace).
const TouchWindow = 10 * time.Minute

// boolCmp orders false before true (as packfile orders its trailer entries).
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Reader is the index's database as Collect reads it outside a transaction (RefStates).
func (x *Index) Reader() RowReader { return x.db }

// Begin starts a transaction of the index: Collect decides what it removes in one, under the
// index's write lock, so that no writer's touch interleaves (RefStates, DeleteRows).
func (x *Index) Begin(ctx context.Context) (*sql.Tx, error) { return x.db.BeginTx(ctx, nil) }

// Built is how many rows BuildFilter read (Store.StatsAtOpen: the index's size at open, without
// counting again).
func (x *Index) Built() int64 { return x.built.Load() }
