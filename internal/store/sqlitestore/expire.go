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
	return expireTables(ctx, d.db, cutoff, nil, "spans", "logs")
}

// ExpireExcept is Expire keeping every row of the runs (trace ids, 32 lowercase hex) in pinned:
// runs in a dataset are never deleted by retention (DESIGN.md "Reruns and datasets").
func (d *DB) ExpireExcept(ctx context.Context, cutoff time.Time, pinned map[string]bool) (int64, error) {
	return expireTables(ctx, d.db, cutoff, pinned, "spans", "logs")
}

func expireTables(ctx context.Context, db *sql.DB, cutoff time.Time, pinned map[string]bool, tables ...string) (int64, error) {
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
		  AND trace_id NOT IN (SELECT value FROM json_each(?)) LIMIT %d)`, t, t, expireChunk)
		for {
			res, err := db.ExecContext(ctx, q, cutoff.UnixNano(), string(keep))
			if err != nil {
				return total, fmt.Errorf("sqlite: expire %s: %w", t, err)
			}
			n, _ := res.RowsAffected()
			total += n
			if n < expireChunk {
				break
			}
		}
	}
	return total, nil
}
