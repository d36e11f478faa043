package sqlitestore

import (
	"context"
	"database/sql"
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
	return expireTables(ctx, d.db, cutoff, "spans", "logs")
}

func expireTables(ctx context.Context, db *sql.DB, cutoff time.Time, tables ...string) (int64, error) {
	var total int64
	for _, t := range tables {
		q := fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE ingested_unix_nano < ? LIMIT %d)`, t, t, expireChunk)
		for {
			res, err := db.ExecContext(ctx, q, cutoff.UnixNano())
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
