// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// expireChunk bounds one DELETE so the writer is never locked out for long.
const expireChunk = 5000

// Expire deletes the spans and log records ingested before cutoff (ingested_unix_nano, the
// retention clock: an imported run from years ago is kept for the full retention after its
// import) and returns how many rows it deleted. It deletes in chunks of a few thousand rows,
// each its own transaction.
func (d *DB) Expire(ctx context.Context, cutoff time.Time) (int64, error) {
	return expireTables(ctx, d.db, cutoff, nil, &hotIndex, "spans", "logs")
}

// ExpireExcept is Expire keeping every row of the runs (trace ids, 32 lowercase hex) in pinned:
// runs in a dataset are never deleted by retention (docs/architecture.md "Reruns and datasets").
func (d *DB) ExpireExcept(ctx context.Context, cutoff time.Time, pinned map[string]bool) (int64, error) {
	return expireTables(ctx, d.db, cutoff, pinned, &hotIndex, "spans", "logs")
}

// expireTables deletes, chunk by chunk, the rows of tables ingested before cutoff outside the
// pinned runs; each chunk is one transaction that also recomputes the run index rows (idx) of the
// runs it touched.
func expireTables(ctx context.Context, db *sql.DB, cutoff time.Time, pinned map[string]bool, idx *runIndex, tables ...string) (int64, error) {
	var total int64
	ids := make([]string, 0, len(pinned))
	for id, ok := range pinned {
		if ok {
			ids = append(ids, id)
		}
	}
	keep, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	for _, t := range tables {
		q := fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE ingested_unix_nano < ?
		  AND trace_id NOT IN (SELECT value FROM json_each(?)) LIMIT %d) RETURNING trace_id`, t, t, expireChunk)
		for {
			n, err := expireChunkTx(ctx, db, q, cutoff.UnixNano(), string(keep), idx)
			total += n
			if err != nil {
				return total, fmt.Errorf("sqlite: expire %s: %w", t, err)
			}
			if n < expireChunk {
				break
			}
		}
	}
	return total, nil
}

// expireChunkTx runs one chunk's DELETE ... RETURNING trace_id and refreshes the run index rows
// of the traces it touched, in one transaction. It returns the rows deleted.
func expireChunkTx(ctx context.Context, db *sql.DB, q string, cutoff int64, keep string, idx *runIndex) (int64, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	rows, err := tx.QueryContext(ctx, q, cutoff, keep)
	if err != nil {
		return 0, err
	}
	var n int64
	var touched traceSet
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		touched.add(id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if idx != nil {
		if err := idx.refresh(ctx, tx, touched.ids); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}
