// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// stmtCache holds a writer's statements (the hot writer's, writerSQL; the warm writer's,
// warmSQL), each prepared once on the file's one writing connection and bound to each
// transaction with tx.StmtContext (database/sql reuses the connection's prepared statement: no
// SQL is compiled again per transaction). They are prepared when the file is opened (prepare,
// prepareKeys): with one connection, preparing on the DB while a transaction holds the
// connection would wait for it forever.
type stmtCache struct {
	mu    sync.Mutex
	m     map[stmtKey]*sql.Stmt
	sqlOf func(stmtKey) string // the SQL of a key (prepareKeys); nil: writerSQL
}

// stmtKey names a cached statement: its kind and, for a multi-row INSERT, its rows.
type stmtKey struct {
	kind string
	rows int
}

// The writer's statements (writerSQL).
var (
	stmtFrame  = stmtKey{kind: "frame"}
	stmtRemove = stmtKey{kind: "remove"}
	stmtPrefix = stmtKey{kind: "prefix"}
)

func stmtSpans(rows int) stmtKey { return stmtKey{kind: "spans", rows: rows} }
func stmtRefs(rows int) stmtKey  { return stmtKey{kind: "refs", rows: rows} }

// writerSQL returns the SQL of the writer's statement k.
func writerSQL(k stmtKey) string {
	switch k.kind {
	case "frame":
		return `INSERT INTO span_frames (codec, dict, spans, data) VALUES (?,?,?,?)`
	case "spans":
		// A span stored already is left as it is (insertSpans replaces it). OR IGNORE rather than
		// ON CONFLICT DO NOTHING: no constraint can then abort the statement half way, so SQLite
		// keeps no statement journal (a copy of every page the statement changes) for it; a row
		// that breaks NOT NULL (never written) would be skipped and fail its replacement.
		// https://www.sqlite.org/lang_conflict.html, https://www.sqlite.org/tempfiles.html#stmtjrnl
		return valuesSQL(`INSERT OR IGNORE INTO spans `+spanColumns+` VALUES`, spanValues, k.rows, "")
	case "remove":
		return `DELETE FROM spans WHERE trace_id = ? AND span_id = ?`
	case "prefix":
		return `INSERT INTO payload_prefixes (prefix) VALUES (?) ON CONFLICT (prefix) DO UPDATE SET prefix = excluded.prefix RETURNING id`
	case "refs":
		return valuesSQL(`INSERT OR IGNORE INTO payload_refs (trace_id, row_id, prefix_id, name) VALUES`, "(?,?,?,?)", k.rows, "")
	}
	if q, ok := patternSQL(k, hotWholeQuery); ok {
		return q
	}
	panic("sqlitestore: unknown writer statement " + k.kind)
}

// writerKeys are every statement of the writer: each kind, each multi-row size.
func writerKeys() []stmtKey {
	keys := append([]stmtKey{stmtFrame, stmtRemove, stmtPrefix}, patternKeys...)
	for n := 1; n <= maxChunkRows; n *= 2 {
		keys = append(keys, stmtSpans(n), stmtRefs(n))
	}
	return keys
}

// prepare prepares every statement of the hot writer (writerKeys) on db, outside any transaction.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB) error {
	return c.prepareKeys(ctx, db, writerKeys(), writerSQL)
}

// prepareKeys prepares the statements keys, of SQL sqlOf(key), on db outside any transaction;
// stmt uses sqlOf for a key not prepared.
func (c *stmtCache) prepareKeys(ctx context.Context, db *sql.DB, keys []stmtKey, sqlOf func(stmtKey) string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[stmtKey]*sql.Stmt{}
	}
	c.sqlOf = sqlOf
	for _, k := range keys {
		st, err := db.PrepareContext(ctx, sqlOf(k))
		if err != nil {
			return fmt.Errorf("prepare %s (%d rows): %w", k.kind, k.rows, err)
		}
		c.m[k] = st
	}
	return nil
}

// stmt returns the statement key names bound to tx; one that was not prepared (a write while
// the file is opened) is prepared in tx, for tx only. A nil cache prepares every statement in tx
// (writerSQL).
func (c *stmtCache) stmt(ctx context.Context, tx *sql.Tx, key stmtKey) (*sql.Stmt, error) {
	if c == nil {
		return tx.PrepareContext(ctx, writerSQL(key))
	}
	c.mu.Lock()
	st, ok := c.m[key]
	sqlOf := c.sqlOf
	c.mu.Unlock()
	if !ok {
		if sqlOf == nil {
			sqlOf = writerSQL
		}
		return tx.PrepareContext(ctx, sqlOf(key))
	}
	return tx.StmtContext(ctx, st), nil
}

// exec runs statement key in tx.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, key stmtKey, args ...any) error {
	st, err := c.stmt(ctx, tx, key)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// query runs statement key in tx and returns its rows.
func (c *stmtCache) query(ctx context.Context, tx *sql.Tx, key stmtKey, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, tx, key)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// close closes every statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// maxChunkRows is the most rows one multi-row INSERT writes (20 span columns: 2,560 bound
// parameters, below SQLite's 32,766, https://www.sqlite.org/limits.html#max_variable_number).
const maxChunkRows = 128

// chunkRows returns how many of n rows the next multi-row INSERT writes: maxChunkRows, else the
// largest power of two <= n, so that a writer prepares at most 8 statements of each kind.
func chunkRows(n int) int {
	if n >= maxChunkRows {
		return maxChunkRows
	}
	k := 1
	for k*2 <= n {
		k *= 2
	}
	return k
}

// valuesSQL returns head followed by rows copies of the row placeholder tuple, comma-separated
// ("INSERT ... VALUES" + " (?,?),(?,?)").
func valuesSQL(head, tuple string, rows int, tail string) string {
	var b strings.Builder
	b.Grow(len(head) + rows*(len(tuple)+1) + len(tail) + 2)
	b.WriteString(head)
	b.WriteByte(' ')
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tuple)
	}
	b.WriteByte(' ')
	b.WriteString(tail)
	return b.String()
}
