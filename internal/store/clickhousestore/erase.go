// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

// Erasure on ClickHouse (runagain delete): each table's rows are removed with a mutation,
// ALTER TABLE ... DELETE WHERE ... with mutations_sync = 2, which rewrites every data part that
// holds a matching row without it and returns once done on every replica (a lightweight DELETE
// only masks rows until a later merge: not enough for an erasure). The count of rows removed is
// read before (SELECT count() with the same condition). See
// https://clickhouse.com/docs/sql-reference/statements/alter/delete.

// Execer is what the erasers need of a database handle (*sql.DB).
type Execer interface {
	Querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// HotEraser erases from the contrib exporter's otel_traces and otel_logs and lists their live
// payload references (store.Eraser, store.RefLister).
type HotEraser struct {
	DB          Execer
	Tables      HotTables
	SessionKeys []string
}

// WarmEraser erases from runagain_span_summaries and runagain_key_events.
type WarmEraser struct {
	DB     Execer
	Schema Schema
}

// ColdEraser erases from runagain_sessions.
type ColdEraser struct {
	DB     Execer
	Schema Schema
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = Quote(strings.ToLower(id))
	}
	return "[" + strings.Join(q, ",") + "]"
}

// logSessionExpr is sessionExpr over a log record's attributes.
func logSessionExpr(keys []string) string {
	if keys == nil {
		keys = genai.DefaultSessionKeys
	}
	var parts []string
	for _, m := range []string{"LogAttributes", "ResourceAttributes"} {
		for _, k := range keys {
			v := fmt.Sprintf("%s[%s]", m, Quote(k))
			parts = append(parts, v+" != ''", v)
		}
	}
	return "multiIf(" + strings.Join(parts, ", ") + ", '')"
}

func queryStrings(ctx context.Context, db Querier, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// deleteWhere counts the rows of table matching cond, then deletes them with a synchronous
// mutation; a table that does not exist holds nothing.
func deleteWhere(ctx context.Context, db Execer, table, cond string) (int64, error) {
	var n int64
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT toInt64(count()) FROM %s WHERE %s", table, cond))
	if MissingTable(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("clickhouse: count %s: %w", table, err)
	}
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return 0, err
		}
	}
	rows.Close()
	if n == 0 {
		return 0, nil
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s SETTINGS mutations_sync = 2", table, cond)); err != nil {
		return 0, fmt.Errorf("clickhouse: delete from %s: %w", table, err)
	}
	return n, nil
}

func traceCond(col string, e store.Erasure) string {
	if len(e.TraceIDs) == 0 {
		return "0"
	}
	return fmt.Sprintf("has(%s, %s)", quoteList(e.TraceIDs), col)
}

// SessionTraces implements store.Eraser.
func (h *HotEraser) SessionTraces(ctx context.Context, session string) ([]string, error) {
	s, id := Quote(session), Quote(strings.ToLower(session))
	a, err := queryStrings(ctx, h.DB, fmt.Sprintf("SELECT DISTINCT TraceId FROM %s WHERE TraceId != '' AND (%s = %s OR TraceId = %s)",
		h.Tables.traces(), sessionExpr(h.SessionKeys), s, id))
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: runs of session %q: %w", session, err)
	}
	b, err := queryStrings(ctx, h.DB, fmt.Sprintf("SELECT DISTINCT TraceId FROM %s WHERE TraceId != '' AND (%s = %s OR TraceId = %s)",
		h.Tables.logs(), logSessionExpr(h.SessionKeys), s, id))
	if err != nil {
		return nil, fmt.Errorf("clickhouse hot tier: runs of session %q: %w", session, err)
	}
	return sortedUnique(append(a, b...)), nil
}

func (h *HotEraser) conds(e store.Erasure) (spans, logs string) {
	spans, logs = traceCond("TraceId", e), traceCond("TraceId", e)
	if e.Session != "" {
		spans += fmt.Sprintf(" OR %s = %s", sessionExpr(h.SessionKeys), Quote(e.Session))
		logs += fmt.Sprintf(" OR %s = %s", logSessionExpr(h.SessionKeys), Quote(e.Session))
	}
	return spans, logs
}

// refFilter keeps a map's payload references (keys ending in _ref whose value is a URI).
const refFilter = "(k, v) -> endsWith(k, '_ref') AND position(v, '://') > 0"

// refsQueries are the queries of the distinct payload references of the spans (attributes and
// event attributes) and of the log records (attributes, log.body_ref) matching the conditions.
func (h *HotEraser) refsQueries(spansWhere, logsWhere string) []string {
	return []string{
		fmt.Sprintf(`SELECT DISTINCT arrayJoin(arrayConcat(mapValues(mapFilter(%[1]s, SpanAttributes)),
  arrayFlatten(arrayMap(m -> mapValues(mapFilter(%[1]s, m)), Events.Attributes)))) AS u FROM %[2]s WHERE %[3]s ORDER BY u`,
			refFilter, h.Tables.traces(), spansWhere),
		fmt.Sprintf(`SELECT DISTINCT arrayJoin(mapValues(mapFilter(%s, LogAttributes))) AS u FROM %s WHERE %s ORDER BY u`,
			refFilter, h.Tables.logs(), logsWhere),
	}
}

// EachPayloadRef implements store.RefLister: the distinct payload references of the spans
// (attributes and event attributes), then of the log records (attributes, log.body_ref); a URI
// both hold is given twice. A log body map's nested K_ref (stored by the exporter as JSON text)
// is not listed. A table that does not exist holds none.
func (h *HotEraser) EachPayloadRef(ctx context.Context, yield func(uri string) bool) error {
	for _, q := range h.refsQueries("1", "1") {
		rows, err := h.DB.QueryContext(ctx, q)
		if MissingTable(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("clickhouse hot tier: list payload references: %w", err)
		}
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return err
			}
			if !yield(u) {
				rows.Close()
				return nil
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Erase implements store.Eraser: spans and log records, with their payload references listed in
// Removed.PayloadRefs.
func (h *HotEraser) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierHot}
	if e.Empty() {
		return r, nil
	}
	spans, logs := h.conds(e)
	var refs []string
	for _, q := range h.refsQueries(spans, logs) {
		got, err := queryStrings(ctx, h.DB, q)
		if err != nil {
			return r, fmt.Errorf("clickhouse hot tier: payload references of the erased rows: %w", err)
		}
		refs = append(refs, got...)
	}
	r.PayloadRefs = sortedUnique(refs)
	n, err := deleteWhere(ctx, h.DB, h.Tables.traces(), spans)
	if err != nil {
		return r, err
	}
	r.Add("spans", n)
	n, err = deleteWhere(ctx, h.DB, h.Tables.logs(), logs)
	if err != nil {
		return r, err
	}
	r.Add("logs", n)
	return r, nil
}

func sessionTracesOf(ctx context.Context, db Querier, session string, tables ...string) ([]string, error) {
	var all []string
	for _, t := range tables {
		ids, err := queryStrings(ctx, db, fmt.Sprintf("SELECT DISTINCT trace_id FROM %s WHERE trace_id != '' AND (session_id = %s OR trace_id = %s)",
			t, Quote(session), Quote(strings.ToLower(session))))
		if err != nil {
			return nil, fmt.Errorf("clickhouse: runs of session %q in %s: %w", session, t, err)
		}
		all = append(all, ids...)
	}
	return sortedUnique(all), nil
}

func sessionCond(col string, e store.Erasure) string {
	c := traceCond("trace_id", e)
	if e.Session != "" {
		c += fmt.Sprintf(" OR %s = %s", col, Quote(e.Session))
	}
	return c
}

// SessionTraces implements store.Eraser.
func (w *WarmEraser) SessionTraces(ctx context.Context, session string) ([]string, error) {
	return sessionTracesOf(ctx, w.DB, session, w.Schema.Table(TableSpanSummaries), w.Schema.Table(TableKeyEvents))
}

// Erase implements store.Eraser: span summaries and key events, and their runs' index and
// signature rows.
func (w *WarmEraser) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierWarm}
	if e.Empty() {
		return r, nil
	}
	for kind, t := range map[string]string{"span_summaries": TableSpanSummaries, "key_events": TableKeyEvents, "runs": TableRuns,
		"run_patterns": TableRunPatterns} {
		n, err := deleteWhere(ctx, w.DB, w.Schema.Table(t), sessionCond("session_id", e))
		if err != nil {
			return r, err
		}
		r.Add(kind, n)
	}
	return r, nil
}

// SessionTraces implements store.Eraser: the runs a session's partials list.
func (c *ColdEraser) SessionTraces(ctx context.Context, session string) ([]string, error) {
	ids, err := queryStrings(ctx, c.DB, fmt.Sprintf("SELECT DISTINCT arrayJoin(trace_ids) FROM %s WHERE session_id = %s OR has(trace_ids, %s)",
		c.Schema.Table(TableSessions), Quote(session), Quote(strings.ToLower(session))))
	if err != nil {
		return nil, fmt.Errorf("clickhouse cold tier: runs of session %q: %w", session, err)
	}
	return sortedUnique(ids), nil
}

// Erase implements store.Eraser: partials of the session (or of a run that is its own session),
// or whose every run is erased, are deleted; partials that list other runs too lose the erased
// trace ids (ALTER TABLE ... UPDATE, synchronous) and keep their aggregates.
func (c *ColdEraser) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierCold}
	if e.Empty() {
		return r, nil
	}
	t := c.Schema.Table(TableSessions)
	ids := quoteList(e.TraceIDs)
	cond := fmt.Sprintf("has(%s, session_id) OR (length(trace_ids) > 0 AND arrayAll(x -> has(%s, x), trace_ids))", ids, ids)
	if e.Session != "" {
		cond += " OR session_id = " + Quote(e.Session)
	}
	n, err := deleteWhere(ctx, c.DB, t, cond)
	if err != nil {
		return r, err
	}
	r.Add("session_partials", n)
	if len(e.TraceIDs) == 0 {
		return r, nil
	}
	var changed int64
	rows, err := c.DB.QueryContext(ctx, fmt.Sprintf("SELECT toInt64(count()) FROM %s WHERE hasAny(trace_ids, %s)", t, ids))
	if MissingTable(err) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("clickhouse cold tier: count partials of erased runs: %w", err)
	}
	if rows.Next() {
		_ = rows.Scan(&changed)
	}
	rows.Close()
	if changed > 0 {
		if _, err := c.DB.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s UPDATE trace_ids = arrayFilter(x -> NOT has(%s, x), trace_ids) WHERE hasAny(trace_ids, %s) SETTINGS mutations_sync = 2",
			t, ids, ids)); err != nil {
			return r, fmt.Errorf("clickhouse cold tier: remove erased runs from partials: %w", err)
		}
		r.Add("session_partials_changed", changed)
	}
	return r, nil
}

var (
	_ store.Eraser    = (*HotEraser)(nil)
	_ store.RefLister = (*HotEraser)(nil)
	_ store.Eraser    = (*WarmEraser)(nil)
	_ store.Eraser    = (*ColdEraser)(nil)
)
