// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
)

// DB is an open hot-tier SQLite file, used by the exporter to write and by the CLI to read.
type DB struct {
	db          *sql.DB
	sessionKeys []string
	now         func() time.Time
	prices      *pricing.Prices
	version     int    // the file's schema version (1: no cost columns, read-only)
	ranks       bool   // the run index has its rankIndex indexes (runindex.go)
	flags       bool   // the run index has its divergences column (ensureFlags)
	hasRefs     bool   // the payload_refs table exists (always when opened for writing)
	refsShape   string // its shape (refsShape): "split" when opened for writing
	codec       *otlpCodec
	// recomputeIndex makes the writer recompute each touched run from all of its span rows (the
	// maintenance before version 5): the same-run baseline of the write benchmarks.
	recomputeIndex bool
	// rowFrames makes the writer compress every span row alone (before version 7): the same-run
	// baseline of the write benchmarks.
	rowFrames bool
	// noPatterns makes the writer mark and sign no run (patternindex.go): the same-run baseline
	// of BenchmarkHotWritePatterns.
	noPatterns bool
	memo       *patterns.Memo // Options.Memo
	signs      *signQueue     // the marked runs waiting to be signed (Options.SignDelay)
	variants   *variantSet    // the variants pattern_signatures holds (writeSignatures)
	group      groupCommit
	stmts      stmtCache                 // the writer's prepared statements
	prefixIDs  *lru.Cache[string, int64] // committed payload_prefixes ids (refs.go)
}

// otlpCols selects a row's otlp_codec, otlp_dict and otlp (codec 0 for a file older than
// version 4, opened read-only).
func (d *DB) otlpCols() string {
	if d.version >= 4 {
		return "otlp_codec, otlp_dict, otlp"
	}
	return "0, 0, otlp"
}

// Options tune Open. The zero value is valid.
type Options struct {
	// SessionKeys are the attributes naming a session; default genai.DefaultSessionKeys.
	SessionKeys []string
	// ReadOnly opens the file without creating it or its schema (the CLI).
	ReadOnly bool
	// Now is the clock for ingested_unix_nano; default time.Now.
	Now func() time.Time
	// Prices prices each LLM call when written (hot cost_usd, warm summaries); default the
	// embedded genai-prices table without overrides (pricing.DefaultPrices).
	Prices *pricing.Prices
	// NoSignatures makes the writer mark and sign no run (patternindex.go): readers sign the
	// failing runs when they list patterns (runagain_storage failure_signatures: read).
	NoSignatures bool
	// Memo is shared by the hot and the warm writer of one process: a failing run both sign from
	// their batches is signed once (patterns.Memo); nil: each signs its own.
	Memo *patterns.Memo
	// SignDelay is how long the writer waits, from a commit that marked runs it could not sign
	// in the transaction, before it reads them back and signs them, coalescing the marks of
	// later commits (signQueue); 0: right after each commit. Readers sign a marked run on the
	// spot meanwhile. Close signs what is waiting.
	SignDelay time.Duration
}

// Open opens (creating if needed, unless ReadOnly) the SQLite file at path, in WAL mode with a
// 10 s busy timeout, and creates the schema. Errors name the path.
func Open(path string, o Options) (*DB, error) {
	db, version, err := openFile(path, o, "hot", ddl+hotIndex.ddl(), SchemaVersion, migrations,
		// A new file gets 16 KiB pages (SQLite's default is 4 KiB): a span row and its index
		// entries fill fewer pages, so a commit writes fewer WAL frames (each frame is a header
		// and a page, two pwrites) and splits fewer B-tree pages; the file is smaller too (the
		// benchmark's hot.db: 46 -> 38.5 MB). A file created with other pages keeps them (the
		// pragma only applies before the first write). Statement journals (multi-row INSERTs) stay
		// in memory instead of temporary files. https://www.sqlite.org/pragma.html#pragma_page_size
		"page_size("+strconv.Itoa(hotPageSize)+")", "temp_store(MEMORY)")
	if err != nil {
		return nil, err
	}
	flags, err := openFlags(context.Background(), db, hotIndex, version >= 3, o.ReadOnly)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
	}
	d := &DB{db: db, sessionKeys: o.SessionKeys, now: o.Now, prices: o.Prices, version: version, noPatterns: o.NoSignatures, memo: o.Memo, variants: newVariantSet(),
		ranks: version >= 3 && hasRankIndexes(context.Background(), db), flags: flags}
	if d.prefixIDs, err = lru.New[string, int64](prefixIDsSize); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.codec, err = newCodec(context.Background(), db, o.ReadOnly, d.now, hotSource); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
	}
	if !o.ReadOnly {
		// The writer's one connection: an 8 MiB page cache for the indexes the writes walk (the
		// default is 2 MiB; 32 MiB measured no faster in make bench and cost peak RSS), and a
		// checkpoint every walCheckpointBytes of WAL (default 1000 pages) so pages written again
		// and again (indexes, runs) are copied back less often.
		// https://www.sqlite.org/pragma.html#pragma_cache_size, #pragma_wal_autocheckpoint
		var pageSize int
		if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil || pageSize <= 0 {
			db.Close()
			return nil, fmt.Errorf("sqlite hot tier: %s: page size %d: %w", path, pageSize, err)
		}
		if _, err := db.Exec(fmt.Sprintf(`PRAGMA cache_size = -8192; PRAGMA wal_autocheckpoint = %d`, walCheckpointBytes/pageSize)); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
		}
		if err := d.ensurePayloadRefs(context.Background()); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
		}
		if err := d.stmts.prepare(context.Background(), db); err != nil {
			d.stmts.close()
			db.Close()
			return nil, fmt.Errorf("sqlite hot tier: %s: %w", path, err)
		}
	} else {
		d.refsShape = refsShape(db)
		d.hasRefs = d.refsShape != ""
	}
	if d.prices == nil {
		d.prices = pricing.DefaultPrices()
	}
	if d.sessionKeys == nil {
		d.sessionKeys = genai.DefaultSessionKeys
	}
	d.signs = newSignQueue(o.SignDelay, func(ctx context.Context, ids []string) {
		_ = signRuns(ctx, d.db, &d.stmts, d.variants, d.Run, nil, d.sessionKeys, d.memo, ids)
	})
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.signs.close()
	d.stmts.close()
	err := d.db.Close()
	d.codec.close()
	return err
}

const (
	// hotPageSize is the page size of a new hot file, in bytes.
	hotPageSize = 16 << 10
	// walCheckpointBytes is the WAL size, in bytes, past which a commit checkpoints it (4096
	// pages of 4 KiB, as before 16 KiB pages): the WAL file keeps the size it grew to.
	walCheckpointBytes = 16 << 20
)

// SQL exposes the handle for tier maintenance (retention) and tests.
func (d *DB) SQL() *sql.DB { return d.db }

// ErrInvalidSpan wraps the reason a span cannot be stored (an all-zero trace or span id).
var ErrInvalidSpan = errors.New("invalid span")

// spanColumns are the columns of a span row the writer inserts, spanValues one row's parameters.
const (
	spanColumns = `(trace_id, span_id, parent_span_id, session_id, name, kind, start_time_unix_nano, end_time_unix_nano,
	   status_code, service_name, genai_kind, model, input_tokens, output_tokens, otlp, ingested_unix_nano,
	   cost_usd, unpriced, otlp_codec, otlp_dict)`
	spanValues = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
)

// WriteTraces stores every span of td. Spans whose trace id or span id is empty (all zero
// bytes, which OTLP forbids) are not stored; they are returned as rejected with the reason, and
// the rest of the batch is stored. A span already stored (same trace and span id: an
// at-least-once retry) is replaced; the run index counts each span once (RunBatch). The spans of
// one trace in td are compressed together as one frame (frames.go). Concurrent calls share a
// transaction (groupcommit.go); each returns once the commit holding its spans is durable, or
// with the error of its own transaction.
func (d *DB) WriteTraces(ctx context.Context, td ptrace.Traces) (rejected []error, err error) {
	w := getTraceWrite()
	defer putTraceWrite(w)
	w.td = td
	rejected, err = d.collectSpans(w, td)
	if err != nil || len(w.spans) == 0 {
		return rejected, err
	}
	d.encodeFrames(w)
	return rejected, d.group.write(ctx, w, d.commitTraces)
}

// commitTraces stores the spans of ws in one transaction.
func (d *DB) commitTraces(ctx context.Context, ws []*traceWrite) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	batch := RunBatch{}
	var refs refBatch
	for _, w := range ws {
		batch.Ingested = max(batch.Ingested, w.now)
		if err := d.insertSpans(ctx, tx, w, &batch, &refs); err != nil {
			return err
		}
	}
	if err := d.flushRefs(ctx, tx, &refs); err != nil {
		return fmt.Errorf("insert payload references: %w", err)
	}
	if err := hotIndex.addExchanges(ctx, tx, &batch); err != nil {
		return err
	}
	if d.recomputeIndex {
		err = hotIndex.rebuild(ctx, tx, batch.traces(), false)
	} else {
		err = hotIndex.apply(ctx, tx, &batch)
	}
	if err != nil {
		return err
	}
	var marked, variants []string
	if !d.noPatterns {
		whole := func(ids []string) map[string]wholeRun { return hotWholeRuns(ws, ids) }
		if marked, variants, err = indexPatterns(ctx, tx, &d.stmts, d.variants, d.sessionKeys, d.memo, &batch, whole); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.variants.add(variants)
	d.committedRefs(&refs)
	d.sign(ctx, marked)
	// The batch is stored: a dictionary that cannot be trained or stored now is tried again with
	// a later batch (maybeTrain), and must not make the caller retry stored spans.
	_ = d.codec.maybeTrain(ctx)
	return nil
}

// WriteLogs stores every log record of ld in one transaction.
func (d *DB) WriteLogs(ctx context.Context, ld plog.Logs) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO logs
	  (record_sha256, trace_id, span_id, session_id, time_unix_nano, severity_number, event_name, service_name, otlp, ingested_unix_nano,
	   otlp_codec, otlp_dict)
	  VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (record_sha256) DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	// A record already stored has the same content (its key is the content's SHA-256): a retry
	// only moves its retention clock, as the replacing write did before.
	again, err := tx.PrepareContext(ctx, `UPDATE logs SET ingested_unix_nano = ? WHERE record_sha256 = ?`)
	if err != nil {
		return err
	}
	defer again.Close()
	var refs refBatch
	now := d.now().UnixNano()
	var m plog.ProtoMarshaler
	batch := RunBatch{Ingested: now}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		service := stringAttr(rl.Resource().Attributes(), genai.AttrServiceName)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			sl := rl.ScopeLogs().At(j)
			for k := 0; k < sl.LogRecords().Len(); k++ {
				lr := sl.LogRecords().At(k)
				one := plog.NewLogs()
				orl := one.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(orl.Resource())
				orl.SetSchemaUrl(rl.SchemaUrl())
				osl := orl.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(osl.Scope())
				osl.SetSchemaUrl(sl.SchemaUrl())
				lr.CopyTo(osl.LogRecords().AppendEmpty())
				buf, err := m.MarshalLogs(one)
				if err != nil {
					return fmt.Errorf("encode log record: %w", err)
				}
				sum := sha256.Sum256(buf)
				stored, codec, dictID := d.codec.encode(nil, buf, false)
				ts := lr.Timestamp()
				if ts == 0 {
					ts = lr.ObservedTimestamp()
				}
				session, _ := genai.SessionID(lr.Attributes(), rl.Resource().Attributes(), d.sessionKeys)
				key := hex.EncodeToString(sum[:])
				if id, ok := lr.Attributes().Get(runagainattr.RecordID); ok && runagainattr.ValidRecordID(id.Str()) {
					// an alert or divergence with an identity is stored once, whatever else differs
					// when it is emitted again (its observed time, its counts so far)
					key = id.Str()
				}
				res, err := stmt.ExecContext(ctx, key, hexOrEmpty(lr.TraceID()), spanHexOrEmpty(lr.SpanID()),
					session, int64(ts), int64(lr.SeverityNumber()), lr.EventName(), service, stored, now, codec, dictID)
				if err != nil {
					return fmt.Errorf("insert log record: %w", err)
				}
				if n, err := res.RowsAffected(); err != nil {
					return err
				} else if n == 0 {
					if _, err := again.ExecContext(ctx, now, key); err != nil {
						return fmt.Errorf("insert log record: %w", err)
					}
				} else if lr.EventName() == store.AlertEventName {
					batch.Alert(hexOrEmpty(lr.TraceID()))
				} else if lr.EventName() == runagainattr.EventDivergence {
					batch.Divergence(hexOrEmpty(lr.TraceID()))
				}
				for _, uri := range store.LogPayloadRefs(lr) {
					refs.add(hexOrEmpty(lr.TraceID()), logRowID(key), uri)
				}
			}
		}
	}
	if err := d.flushRefs(ctx, tx, &refs); err != nil {
		return fmt.Errorf("insert payload references of log records: %w", err)
	}
	if err := hotIndex.apply(ctx, tx, &batch); err != nil {
		return err
	}
	var marked []string
	if !d.noPatterns {
		var err error
		if marked, _, err = indexPatterns(ctx, tx, &d.stmts, d.variants, d.sessionKeys, d.memo, &batch, nil); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.committedRefs(&refs)
	d.sign(ctx, marked)
	return nil
}

// sign writes the signatures of the runs a committed batch marked and did not sign in its
// transaction (indexPatterns): those are read back, after Options.SignDelay (signQueue). A
// failure leaves them marked, and readers compute them: the stored batch is not retried for it.
func (d *DB) sign(ctx context.Context, marked []string) { d.signs.add(ctx, marked) }

func hexOrEmpty(id pcommon.TraceID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}

func spanHexOrEmpty(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}

func stringAttr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// Runs implements store.Reader: from the run index (RunsTable), reading as many index rows as
// it returns; a file of an older schema version opened read-only has no index and is listed by
// aggregating its span rows (listRuns), as before the index existed.
func (d *DB) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	if d.version >= 3 {
		return indexedRuns(ctx, runsQueryer(d.db, d.flags), f, store.RunOrder{}, store.TierHot, d.ranks)
	}
	cost := "SUM(cost_usd), SUM(unpriced)"
	if d.version < 2 {
		cost = "0, 0" // a version 1 file (read-only) has no cost columns
	}
	return listRuns(ctx, d.db, f, "spans", cost, "hot")
}

// FiltersRunIndex implements store.RunIndexFilterer: a file with the run index and its
// divergences column applies the cost, error and alert filters in it (RunsQuery).
func (d *DB) FiltersRunIndex() bool { return d.version >= 3 && d.flags }

// RankedRuns implements store.RankedRunLister from the run index (RankedRunsQuery). A file
// without it fails with errors.ErrUnsupported.
func (d *DB) RankedRuns(ctx context.Context, f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
	if d.version < 3 {
		return nil, fmt.Errorf("sqlite hot tier: schema version %d has no run index: %w", d.version, errors.ErrUnsupported)
	}
	return indexedRuns(ctx, runsQueryer(d.db, d.flags), f, o, store.TierHot, d.ranks)
}

// AggregateRunsQuery is the listing over span rows that file versions without the run index are
// read with (and every listing was before it): one aggregate per trace over every row of table
// (spans, span_summaries), then sorted. costCols selects the cost and unpriced sums ("0, 0" where
// the table has none). The read benchmark measures it as the baseline.
func AggregateRunsQuery(f store.RunFilter, table, costCols string) (q string, args []any) {
	q = `SELECT trace_id, COALESCE(MAX(NULLIF(session_id, '')), ''), MIN(start_time_unix_nano), MAX(MAX(end_time_unix_nano, start_time_unix_nano)),
	        COUNT(*), COALESCE(GROUP_CONCAT(DISTINCT NULLIF(model, '')), ''), SUM(input_tokens), SUM(output_tokens),
	        SUM(status_code = 2), ` + costCols + `,
	        SUM(parent_span_id = ''),
	        SUM(parent_span_id != '' AND NOT EXISTS (SELECT 1 FROM ` + table + ` p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)),
	        ` + aggregateAlerts(table) + `, ` + aggregateDivergences(table) + `
	      FROM ` + table + ` AS s GROUP BY trace_id`
	var having []string
	if !f.Since.IsZero() {
		having = append(having, `MIN(start_time_unix_nano) >= ?`)
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		having = append(having, `MIN(start_time_unix_nano) < ?`)
		args = append(args, f.Until.UnixNano())
	}
	if f.SessionID != "" {
		having = append(having, `COALESCE(MAX(NULLIF(session_id, '')), trace_id) = ?`)
		args = append(args, f.SessionID)
	}
	if len(having) > 0 {
		q += ` HAVING ` + strings.Join(having, " AND ")
	}
	q += ` ORDER BY MIN(start_time_unix_nano) DESC, trace_id`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return q, args
}

// aggregateAlerts is the alert records of the trace s.trace_id, as the run index counts them (the
// hot file's logs, the warm file's key events); 0 for another table.
func aggregateAlerts(table string) string {
	switch table {
	case hotIndex.spans:
		return hotIndex.alerts
	case warmIndex.spans:
		return warmIndex.alerts
	}
	return "0"
}

// aggregateDivergences is the replay divergence records of the trace s.trace_id, as the hot run
// index counts them; 0 for another table.
func aggregateDivergences(table string) string {
	if table == hotIndex.spans {
		return hotIndex.divergences
	}
	return "0"
}

// listRuns is the run listing shared by the hot (spans) and warm (span_summaries) tables: one
// row per trace, newest first. costCols selects the cost and unpriced sums ("0, 0" where the
// table has none).
func listRuns(ctx context.Context, db *sql.DB, f store.RunFilter, table, costCols, tier string) ([]store.RunSummary, error) {
	q, args := AggregateRunsQuery(f, table, costCols)
	return scanRuns(ctx, db, q, args, tier)
}

// Run implements store.Reader: every stored span and log record of the trace.
func (d *DB) Run(ctx context.Context, traceID string) (*store.Run, error) {
	traceID = strings.ToLower(traceID)
	run := &store.Run{TraceID: traceID, Traces: ptrace.NewTraces(), Logs: plog.NewLogs(), Tier: "hot"}
	spans, frames, err := d.spanRows(ctx, traceID)
	if err != nil {
		return nil, fmt.Errorf("sqlite hot tier: read run %s: %w", traceID, err)
	}
	if len(spans) == 0 {
		return nil, store.ErrNotFound
	}
	var um ptrace.ProtoUnmarshaler
	fr := frameReader{c: d.codec, stored: frames}
	for _, r := range spans {
		raw, err := fr.span(ctx, r.codec, r.dict, r.buf)
		if err != nil {
			return nil, fmt.Errorf("sqlite hot tier: decode span of %s: %w", traceID, err)
		}
		one, err := um.UnmarshalTraces(raw)
		if err != nil {
			return nil, fmt.Errorf("sqlite hot tier: decode span of %s: %w", traceID, err)
		}
		one.ResourceSpans().MoveAndAppendTo(run.Traces.ResourceSpans())
	}
	// Records stamped alike keep the order they arrived in (rowid): an instrumentation that sends
	// a prompt's messages as records with one timestamp relies on it (genai.LLMCallMessages).
	logs, err := d.storedRows(ctx, `SELECT `+d.otlpCols()+` FROM logs WHERE trace_id = ? ORDER BY time_unix_nano, rowid`, traceID)
	if err != nil {
		return nil, fmt.Errorf("sqlite hot tier: read logs of %s: %w", traceID, err)
	}
	var lum plog.ProtoUnmarshaler
	for _, r := range logs {
		raw, err := d.codec.decode(ctx, r.codec, r.dict, r.buf)
		if err != nil {
			return nil, fmt.Errorf("sqlite hot tier: decode log of %s: %w", traceID, err)
		}
		one, err := lum.UnmarshalLogs(raw)
		if err != nil {
			return nil, fmt.Errorf("sqlite hot tier: decode log of %s: %w", traceID, err)
		}
		one.ResourceLogs().MoveAndAppendTo(run.Logs.ResourceLogs())
	}
	return run, nil
}

// spanRows reads the span rows of traceID (start time, then span id) and the span frames they
// point into, in one statement: one snapshot, so a frame a concurrent retry releases is read
// with the rows that pointed into it.
func (d *DB) spanRows(ctx context.Context, traceID string) ([]storedRow, map[int64]storedRow, error) {
	if d.version < 7 {
		rows, err := d.storedRows(ctx, `SELECT `+d.otlpCols()+` FROM spans WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id`, traceID)
		return rows, nil, err
	}
	rows, err := d.db.QueryContext(ctx, `SELECT 0 AS frame, otlp_codec, otlp_dict, otlp, start_time_unix_nano AS t, span_id AS k
	    FROM spans WHERE trace_id = ?1
	  UNION ALL SELECT 1, codec, dict, data, id, '' FROM span_frames
	    WHERE id IN (SELECT otlp_dict FROM spans WHERE trace_id = ?1 AND otlp_codec = 3)
	  ORDER BY 1, 5, 6`, traceID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var spans []storedRow
	var frames map[int64]storedRow
	for rows.Next() {
		var frame bool
		var r storedRow
		var t int64
		var k string
		if err := rows.Scan(&frame, &r.codec, &r.dict, &r.buf, &t, &k); err != nil {
			return nil, nil, err
		}
		if !frame {
			spans = append(spans, r)
			continue
		}
		if frames == nil {
			frames = map[int64]storedRow{}
		}
		frames[t] = r
	}
	return spans, frames, rows.Err()
}

// storedRow is an otlp column as stored, with its codec and dictionary id.
type storedRow struct {
	codec, dict int64
	buf         []byte
}

// storedRows reads every row of q (selecting otlpCols) before any is decoded: decoding may look
// a dictionary up, which a handle with one connection could not do while the rows hold it.
func (d *DB) storedRows(ctx context.Context, q string, args ...any) ([]storedRow, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedRow
	for rows.Next() {
		var r storedRow
		if err := rows.Scan(&r.codec, &r.dict, &r.buf); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

var _ store.Reader = (*DB)(nil)

// DivergedRuns implements store.DivergedRunLister: the distinct trace ids of the log records of
// event runagainattr.EventDivergence, through the logs_event index.
func (d *DB) DivergedRuns(ctx context.Context) ([]string, error) {
	ids, err := queryStrings(ctx, d.db, `SELECT DISTINCT trace_id FROM logs WHERE event_name = ? AND trace_id != ''`, runagainattr.EventDivergence)
	if err != nil {
		return nil, fmt.Errorf("diverged runs: %w", err)
	}
	return ids, nil
}

// TraceIDsWithPrefix implements store.TraceIDPrefixLister from the run index; a file without one
// (an older version, read-only) from the spans table's (trace_id, span_id) index.
func (d *DB) TraceIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	if d.version >= 3 {
		return idsWithPrefix(ctx, d.db, RunsTable, prefix, limit)
	}
	return idsWithPrefix(ctx, d.db, "spans", prefix, limit)
}

// idsWithPrefix lists up to limit distinct trace ids of table starting with prefix (lower-case
// hex), in order: a range of an index led by trace_id (the run index's key; spans' and
// span_summaries' (trace_id, span_id)), as many entries as it returns. Every trace id is
// lower-case hex, so prefix+"g" bounds those that start with prefix.
func idsWithPrefix(ctx context.Context, db *sql.DB, table, prefix string, limit int) ([]string, error) {
	ids, err := queryStrings(ctx, db, `SELECT DISTINCT trace_id FROM `+table+` WHERE trace_id >= ? AND trace_id < ? ORDER BY trace_id LIMIT ?`,
		prefix, prefix+"g", limit)
	if err != nil {
		return nil, fmt.Errorf("trace ids starting with %s: %w", prefix, err)
	}
	return ids, nil
}

// queryStrings runs q and returns its one text column, row by row.
func queryStrings(ctx context.Context, db queryer, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
