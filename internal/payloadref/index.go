package payloadref

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/cenkalti/backoff/v5"
	"modernc.org/sqlite" // database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IndexFile is the name of the digest index in a Store's data directory.
const IndexFile = "payload-index.db"

// index is the persistent digest index: one row per object written to a pack (digest and kind ->
// pack, frame offset and length, last time a value referenced it), and one row per pack (staged
// or uploaded). It is a SQLite file in WAL mode, so the collector (writing) and the CLI (collecting
// or erasing) use it at once; busy_timeout serialises their writes.
type index struct {
	db *sql.DB
}

const indexSchema = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
	digest   BLOB    NOT NULL,
	manifest INTEGER NOT NULL,
	pack     TEXT    NOT NULL,
	off      INTEGER NOT NULL,
	len      INTEGER NOT NULL,
	last_ref INTEGER NOT NULL, -- unix nanoseconds: written, or last dedup hit
	PRIMARY KEY (digest, manifest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS objects_pack ON objects (pack);
CREATE TABLE IF NOT EXISTS packs (
	id       TEXT PRIMARY KEY,
	uploaded INTEGER NOT NULL, -- 0 staged, 1 in the bucket
	size     INTEGER NOT NULL,
	created  INTEGER NOT NULL
);
`

// openIndex opens (creating) the index at path for the bucket bucketURL. An index built for
// another bucket is emptied by a writer (its locations would name packs the new bucket does not
// hold); a collector (keep) refuses it instead, naming both buckets.
func openIndex(ctx context.Context, path, bucketURL string, keep bool) (*index, error) {
	// Openers that create the file at the same moment (the processor and the storage extension's
	// sweep at start, or the CLI) can meet SQLITE_BUSY that the busy timeout does not cover
	// (switching a new file to WAL takes an exclusive lock at once): retried for up to 10 s.
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = 10 * time.Millisecond
	return backoff.Retry(ctx, func() (*index, error) {
		x, err := openIndexOnce(ctx, path, bucketURL, keep)
		var se *sqlite.Error
		if err != nil && !(errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY) {
			return nil, backoff.Permanent(err)
		}
		return x, err
	}, backoff.WithBackOff(eb), backoff.WithMaxElapsedTime(10*time.Second))
}

// openIndexOnce is one attempt of openIndex.
func openIndexOnce(ctx context.Context, path, bucketURL string, keep bool) (*index, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("payload index %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, indexSchema); err != nil {
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
	return &index{db: db}, nil
}

func (x *index) close() error { return x.db.Close() }

// lookup returns the pack holding k, or "" when the index has no row for it.
func (x *index) lookup(ctx context.Context, k objKey) (string, error) {
	var pack string
	err := x.db.QueryRowContext(ctx, `SELECT pack FROM objects WHERE digest = ? AND manifest = ?`, k.sum[:], k.manifest).Scan(&pack)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return pack, err
}

// location is an object in a pack (the unit the index records).
type location struct {
	objKey
	pack string
}

// commit records new objects (with last_ref = now) and touches dedup hits, in one transaction.
// It returns the hits whose row is gone or names another pack (collected meanwhile): the values
// naming them must be stored again.
func (x *index) commit(ctx context.Context, added []packEntryAt, hits []location, now time.Time) (stale []location, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	ts := now.UnixNano()
	if len(added) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO objects (digest, manifest, pack, off, len, last_ref) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (digest, manifest) DO UPDATE SET pack = excluded.pack, off = excluded.off, len = excluded.len, last_ref = excluded.last_ref`)
		if err != nil {
			return nil, err
		}
		for _, a := range added {
			if _, err := st.ExecContext(ctx, a.sum[:], a.manifest, a.pack, a.off, a.zlen, ts); err != nil {
				return nil, err
			}
		}
		_ = st.Close()
	}
	if len(hits) > 0 {
		st, err := tx.PrepareContext(ctx, `UPDATE objects SET last_ref = ? WHERE digest = ? AND manifest = ? AND pack = ?`)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			r, err := st.ExecContext(ctx, ts, h.sum[:], h.manifest, h.pack)
			if err != nil {
				return nil, err
			}
			if n, _ := r.RowsAffected(); n == 0 {
				stale = append(stale, h)
			}
		}
		_ = st.Close()
	}
	return stale, tx.Commit()
}

// packEntryAt is a pack entry with its pack id.
type packEntryAt struct {
	packEntry
	pack string
}

// setPack records a pack's state (staged or uploaded) and size.
func (x *index) setPack(ctx context.Context, id string, uploaded bool, size int64, created time.Time) error {
	_, err := x.db.ExecContext(ctx, `INSERT INTO packs (id, uploaded, size, created) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET uploaded = excluded.uploaded, size = excluded.size`, id, uploaded, size, created.UnixNano())
	return err
}

// objectCount is the number of objects indexed.
func (x *index) objectCount(ctx context.Context) (int64, error) {
	var n int64
	err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM objects`).Scan(&n)
	return n, err
}

// forget removes, in one transaction, the rows of the dead objects of pack that were not
// referenced since cutoff, and returns those it kept (a row naming this pack, referenced at or
// after cutoff: a writer deduplicated against it after the mark began).
// Dead objects with no row naming this pack are returned in unindexed.
// With dryRun nothing is deleted (the same answer, for deciding whether to act).
func (x *index) forget(ctx context.Context, pack string, dead []objKey, cutoff func(objKey) time.Time, dryRun bool) (kept, unindexed map[objKey]bool, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback() }()
	kept, unindexed = map[objKey]bool{}, map[objKey]bool{}
	sel, err := tx.PrepareContext(ctx, `SELECT last_ref FROM objects WHERE digest = ? AND manifest = ? AND pack = ?`)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = sel.Close() }()
	del, err := tx.PrepareContext(ctx, `DELETE FROM objects WHERE digest = ? AND manifest = ? AND pack = ?`)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = del.Close() }()
	for _, k := range dead {
		var last int64
		err := sel.QueryRowContext(ctx, k.sum[:], k.manifest, pack).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			unindexed[k] = true // nothing dedups against this copy through the index
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if last >= cutoff(k).UnixNano() {
			kept[k] = true
			continue
		}
		if dryRun {
			continue
		}
		if _, err := del.ExecContext(ctx, k.sum[:], k.manifest, pack); err != nil {
			return nil, nil, err
		}
	}
	return kept, unindexed, tx.Commit()
}

// moved records new frame offsets after pack was rewritten, or drops the pack's row when it was deleted.
func (x *index) moved(ctx context.Context, pack string, entries []packEntry, deleted bool, size int64) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if deleted {
		if _, err := tx.ExecContext(ctx, `DELETE FROM objects WHERE pack = ?`, pack); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM packs WHERE id = ?`, pack); err != nil {
			return err
		}
		return tx.Commit()
	}
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, `UPDATE objects SET off = ?, len = ? WHERE digest = ? AND manifest = ? AND pack = ?`,
			e.off, e.zlen, e.sum[:], e.manifest, pack); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE packs SET size = ? WHERE id = ?`, size, pack); err != nil {
		return err
	}
	return tx.Commit()
}
