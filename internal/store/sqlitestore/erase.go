// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/store"
)

// Erasure (runagain delete): every row of the named runs, and every row naming the session, is
// deleted in one transaction on a connection with PRAGMA secure_delete on (SQLite overwrites
// the deleted content with zeros instead of leaving it in free space), then the WAL is
// checkpointed and truncated so no older copy of the pages stays in the -wal file. It is safe
// while the collector writes: transactions wait on the 10 s busy timeout. See
// https://www.sqlite.org/pragma.html#pragma_secure_delete and #pragma_wal_checkpoint.

// sessionTraces lists the distinct non-empty trace ids of the rows of tables whose session_id
// is session, plus session itself when it is the trace id of a stored row (a run without a
// session is its own session).
func sessionTraces(ctx context.Context, db *sql.DB, session string, tables ...string) ([]string, error) {
	seen := map[string]bool{}
	for _, t := range tables {
		rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT trace_id FROM %s WHERE session_id = ? AND trace_id != ''
		  UNION SELECT trace_id FROM (SELECT trace_id FROM %s WHERE trace_id = ? LIMIT 1)`, t, t), session, strings.ToLower(session))
		if err != nil {
			return nil, fmt.Errorf("sqlite: runs of session %q in %s: %w", session, t, err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			seen[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// SessionTraces implements store.Eraser over spans and logs. From version 8 the runs with a
// span of the session are read from the run index (runs_session and run_sessions, runindex.go);
// an older file, read-only, from its spans_session index.
func (d *DB) SessionTraces(ctx context.Context, session string) ([]string, error) {
	if d.version < 8 {
		return sessionTraces(ctx, d.db, session, "spans", "logs")
	}
	ids, err := sessionTraces(ctx, d.db, session, "logs")
	if err != nil {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, `SELECT trace_id FROM runs WHERE session_id = ?1
	  UNION SELECT trace_id FROM run_sessions WHERE session_id = ?1
	  UNION SELECT trace_id FROM runs WHERE trace_id = ?2`, session, strings.ToLower(session))
	if err != nil {
		return nil, fmt.Errorf("sqlite: runs of session %q: %w", session, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Strings(ids)
	return slices.Compact(ids), nil
}

// SessionTraces implements store.Eraser over span_summaries and key_events.
func (w *WarmDB) SessionTraces(ctx context.Context, session string) ([]string, error) {
	return sessionTraces(ctx, w.db, session, "span_summaries", "key_events")
}

// Erase implements store.Eraser for the hot tier: spans and log records (their payload_refs go
// with them, counted as "payload_refs"). Removed.PayloadRefs lists the references the deleted
// rows held, for the payload sweep.
func (d *DB) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierHot}
	if e.Empty() {
		return r, nil
	}
	err := eraseTx(ctx, d.db, e.TraceIDs, func(tx *sql.Tx, ids string) error {
		if d.version >= 8 && e.Session != "" {
			// The runs with a span of the session, as this transaction sees them (a run written
			// since the caller resolved the session is erased too).
			var err error
			if ids, err = sessionRunIDs(ctx, tx, ids, e.Session); err != nil {
				return err
			}
		}
		if d.hasRefs {
			refs, err := tx.QueryContext(ctx, `SELECT DISTINCT uri FROM payload_ref_uris WHERE trace_id IN (SELECT value FROM json_each(?))
			  OR row_id IN (SELECT 'log:' || record_sha256 FROM logs WHERE session_id = ? AND ? != '')`, ids, e.Session, e.Session)
			if err != nil {
				return err
			}
			for refs.Next() {
				var u string
				if err := refs.Scan(&u); err != nil {
					refs.Close()
					return err
				}
				r.PayloadRefs = append(r.PayloadRefs, u)
			}
			refs.Close()
			if err := refs.Err(); err != nil {
				return err
			}
		}
		before := countRows(ctx, tx, "payload_refs", d.hasRefs)
		runsBefore := countRows(ctx, tx, RunsTable, true)
		for _, t := range []string{"spans", "logs"} {
			session := e.Session
			if t == "spans" && d.version >= 8 {
				// Every run with a span of the session is in ids (SessionTraces: the run index):
				// without spans_session, the session term would scan every span row.
				session = ""
			}
			n, err := deleteMatching(ctx, tx, t, ids, session)
			if err != nil {
				return err
			}
			r.Add(t, n)
		}
		if d.hasRefs {
			r.Add("payload_refs", before-countRows(ctx, tx, "payload_refs", true))
		}
		r.Add("run_index", runsBefore-countRows(ctx, tx, RunsTable, true)) // its triggers delete with the spans
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("sqlite hot tier: erase: %w", err)
	}
	r.Notes = append(r.Notes, checkpoint(ctx, d.db)...)
	return r, nil
}

// sessionRunIDs returns the JSON array ids (trace ids) with the runs of session in the run index
// (runs_session, run_sessions) added.
func sessionRunIDs(ctx context.Context, tx *sql.Tx, ids, session string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT value FROM json_each(?1)
	  UNION SELECT trace_id FROM runs WHERE session_id = ?2 UNION SELECT trace_id FROM run_sessions WHERE session_id = ?2`, ids, session)
	if err != nil {
		return "", fmt.Errorf("runs of session %q: %w", session, err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		all = append(all, id)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return idsJSON(all), nil
}

// Erase implements store.Eraser for the warm tier: span summaries and key events.
func (w *WarmDB) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierWarm}
	if e.Empty() {
		return r, nil
	}
	err := eraseTx(ctx, w.db, e.TraceIDs, func(tx *sql.Tx, ids string) error {
		runsBefore := countRows(ctx, tx, RunsTable, true)
		for _, t := range []string{"span_summaries", "key_events"} {
			n, err := deleteMatching(ctx, tx, t, ids, e.Session)
			if err != nil {
				return err
			}
			r.Add(t, n)
		}
		r.Add("run_index", runsBefore-countRows(ctx, tx, RunsTable, true))
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("sqlite warm tier: erase: %w", err)
	}
	r.Notes = append(r.Notes, checkpoint(ctx, w.db)...)
	return r, nil
}

// eraseTx runs f in one transaction on a connection with secure_delete on; ids is the JSON array
// of e's trace ids (json_each).
func eraseTx(ctx context.Context, db *sql.DB, traceIDs []string, f func(tx *sql.Tx, ids string) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `PRAGMA secure_delete = OFF`) //nolint:errcheck // best effort: the connection's default
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	lower := make([]string, len(traceIDs))
	for i, id := range traceIDs {
		lower[i] = strings.ToLower(id)
	}
	if err := f(tx, idsJSON(lower)); err != nil {
		return err
	}
	return tx.Commit()
}

func countRows(ctx context.Context, tx *sql.Tx, table string, ok bool) int64 {
	if !ok {
		return 0
	}
	var n int64
	_ = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n)
	return n
}

// deleteMatching deletes the rows of table whose trace id is in ids (a JSON array) or whose
// session_id is session (when not empty).
func deleteMatching(ctx context.Context, tx *sql.Tx, table, ids, session string) (int64, error) {
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE trace_id IN (SELECT value FROM json_each(?))
	  OR (? != '' AND session_id = ?)`, table), ids, session, session)
	if err != nil {
		return 0, fmt.Errorf("delete from %s: %w", table, err)
	}
	return res.RowsAffected()
}

// checkpoint copies the WAL into the database file and truncates it (the WAL keeps the images of
// pages as they were before the erasure until then); a checkpoint blocked by a reader is
// reported in words, not as an error: the data is deleted, its old page images go at the next
// checkpoint.
func checkpoint(ctx context.Context, db *sql.DB) []string {
	var busy, logFrames, done int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
		return []string{fmt.Sprintf("WAL checkpoint failed (%v): old page images stay in the -wal file until the next checkpoint", err)}
	}
	if busy != 0 {
		return []string{"WAL checkpoint blocked by a reader: old page images stay in the -wal file until the next checkpoint (the collector checkpoints as it writes)"}
	}
	return nil
}

func idsJSON(ids []string) string {
	if ids == nil {
		ids = []string{}
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// Compact rebuilds the file (VACUUM) and truncates its WAL. Deleted rows are zeroed where they
// were (secure_delete), but SQLite leaves stale copies of cells in the unallocated space of
// pages it rebalanced earlier, long before an erasure; only a rebuild removes those. VACUUM
// takes the write lock for its whole run (the collector's writes wait on the busy timeout,
// then are retried by their sending queue) and needs free disk space of the file's size.
func (d *DB) Compact(ctx context.Context) ([]string, error) { return compact(ctx, d.db, "hot") }

// Compact is DB.Compact for the warm file.
func (w *WarmDB) Compact(ctx context.Context) ([]string, error) { return compact(ctx, w.db, "warm") }

func compact(ctx context.Context, db *sql.DB, tier string) ([]string, error) {
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		return nil, fmt.Errorf("sqlite %s tier: vacuum: %w", tier, err)
	}
	return checkpoint(ctx, db), nil
}
