// SPDX-License-Identifier: Apache-2.0

package sqlitestore

// # Failure signatures in the run index (issue 32)
//
// Each failing run's signature (internal/patterns: computed from the run read through
// internal/runview, never re-derived here) is kept beside its index row, so listing patterns
// reads the index and not the runs:
//
//	run_patterns (hot and warm file)
//	  trace_id    TEXT     the run (runs.trace_id); primary key, WITHOUT ROWID
//	  pattern_id  TEXT     patterns.Signature.ID ('' until computed)
//	  variant_id  TEXT     patterns.Signature.VariantID
//	  agent       TEXT     patterns.Agent: gen_ai.agent.name of the run, else service.name
//	  version     INTEGER  patterns.SignatureVersion it was computed with
//	  dirty       INTEGER  0: current; > 0: a write changed the run since (a generation counter)
//	  index run_patterns_pattern (pattern_id, trace_id); deleted with the run's index row (trigger)
//
//	pattern_signatures
//	  variant_id  TEXT  primary key; signature TEXT: patterns.Signature.JSON; pattern_id TEXT
//
// A passing run has no row. In the transaction that writes a span row, alert or divergence
// record that can make a run fail (patterns.SpanSignal: status ERROR, an exchange answered >= 400,
// an abnormal finish reason; every alert and divergence record), the writer signs the run from the
// batch when the batch holds all of its rows, and writes its row as final (indexPatterns);
// otherwise it marks the run dirty, as it does any other run of the batch that already has a row.
// After the commit, once Options.SignDelay has passed (signQueue: later commits' marks
// coalesce), it reads each marked run back (Run), builds its view and signature and writes them,
// clearing the mark only if no write marked the run again meanwhile. Runs whose only signal is
// being incomplete (no root yet, orphans) get no row: the listing reads their flags from
// runs.roots and runs.orphans. A reader computes on the
// spot, without writing, the signature of a run still marked, of another version, or without a
// row but with errors or alerts in its index row (a file written before signatures were).
// The cost on the write path is one lookup per batch; only failing runs that straddle batches
// are read back (BENCHMARKS.md, "Signatures at ingest").

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

const patternsDDL = `
CREATE TABLE IF NOT EXISTS run_patterns (
  trace_id   TEXT    NOT NULL PRIMARY KEY,
  pattern_id TEXT    NOT NULL,
  variant_id TEXT    NOT NULL,
  agent      TEXT    NOT NULL,
  version    INTEGER NOT NULL,
  dirty      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_patterns_pattern ON run_patterns (pattern_id, trace_id);
CREATE TABLE IF NOT EXISTS pattern_signatures (
  variant_id TEXT NOT NULL PRIMARY KEY,
  pattern_id TEXT NOT NULL,
  signature  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS runs_patterns_delete AFTER DELETE ON runs BEGIN
  DELETE FROM run_patterns WHERE trace_id = old.trace_id;
END;
`

// The pattern index's statements, prepared once in the hot and the warm writer's stmtCache
// (patternSQL) like their other statements: at each batch's few statements, compiling them again
// was a visible share of signing (BENCHMARKS.md, "Failure patterns").
var (
	stmtMarkSignals = stmtKey{kind: "patterns.mark"}
	stmtMarkOthers  = stmtKey{kind: "patterns.mark-others"}
	stmtWhole       = stmtKey{kind: "patterns.whole"}
	stmtSigGone     = stmtKey{kind: "patterns.gone"}
	stmtSigGoneAt   = stmtKey{kind: "patterns.gone-at"}
	stmtSigVariants = stmtKey{kind: "patterns.variants"}
	stmtSigRows     = stmtKey{kind: "patterns.rows"}
	stmtSigUpsert   = stmtKey{kind: "patterns.upsert"}
)

// patternKeys are the pattern index's statements.
var patternKeys = []stmtKey{stmtMarkSignals, stmtMarkOthers, stmtWhole, stmtSigGone, stmtSigGoneAt, stmtSigVariants, stmtSigRows, stmtSigUpsert}

// patternSQL returns the SQL of the pattern index's statement k, whole being the tier's
// wholeQuery (hotWholeQuery, warmWholeQuery); false for another statement. The writes are OR
// IGNORE (the upserts' own conflict target still updates): with no constraint left that can
// abort one half way, SQLite keeps no statement journal for them (as the span INSERT,
// writerSQL); their values are never NULL.
func patternSQL(k stmtKey, whole string) (string, bool) {
	switch k {
	case stmtMarkSignals:
		return `INSERT OR IGNORE INTO run_patterns (trace_id, pattern_id, variant_id, agent, version, dirty)
		  SELECT value, '', '', '', 0, 1 FROM json_each(?) WHERE true
		  ON CONFLICT (trace_id) DO UPDATE SET dirty = dirty + 1`, true
	case stmtMarkOthers:
		return `UPDATE OR IGNORE run_patterns SET dirty = dirty + 1
		  WHERE trace_id IN (SELECT value FROM json_each(?)) RETURNING trace_id`, true
	case stmtWhole:
		return whole, true
	// Each of the following looks the runs up by primary key (j.value ->> 0: a run id).
	case stmtSigGone:
		return `DELETE FROM run_patterns WHERE trace_id IN (SELECT value ->> 0 FROM json_each(?))`, true
	case stmtSigGoneAt:
		return `DELETE FROM run_patterns WHERE (trace_id, dirty) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, true
	case stmtSigVariants:
		return `INSERT OR IGNORE INTO pattern_signatures (variant_id, pattern_id, signature)
		  SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`, true
	case stmtSigRows:
		return `UPDATE OR IGNORE run_patterns SET pattern_id = j.value ->> 1, variant_id = j.value ->> 2,
		  agent = j.value ->> 3, version = ?, dirty = 0
		  FROM json_each(?) j WHERE run_patterns.trace_id = j.value ->> 0 AND run_patterns.dirty = j.value ->> 4`, true
	case stmtSigUpsert:
		return `INSERT OR IGNORE INTO run_patterns (trace_id, pattern_id, variant_id, agent, version, dirty)
		  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, ?, 0 FROM json_each(?) WHERE true
		  ON CONFLICT (trace_id) DO UPDATE SET pattern_id = excluded.pattern_id, variant_id = excluded.variant_id,
		    agent = excluded.agent, version = excluded.version, dirty = 0`, true
	}
	return "", false
}

// indexPatterns keeps, in the write transaction tx, the pattern index of the runs batch b wrote,
// and returns the runs it marked dirty (for signRuns after the commit) and the variants it stored
// (for known.add once tx is committed). whole gives the runs ids as the batch holds them
// (hotWholeRuns, warmWholeRuns); nil: the batch holds no run whole (a batch of log records).
//
// A run with a signal in b (b.signals) whose every stored row is the batch's (whole: its rows, as
// Run would read them back; stmtWhole) is signed here, its row written in its final state by one
// upsert (or deleted, when it does not fail): no mark, no read back, no second transaction. Every
// other run with a signal is marked (stmtMarkSignals), as is any other run of b that already has a
// row (stmtMarkOthers). A run whose spans all come in one request is whole, and costs the batch
// the lookup and one upsert instead of a mark, a read back and a second transaction
// (BENCHMARKS.md, "Signatures at ingest"). A run whose signature cannot be built is marked (signRuns and readers
// try again); an SQL error fails the transaction, like any other write of it.
func indexPatterns(ctx context.Context, tx *sql.Tx, stmts *stmtCache, known *variantSet, keys []string, memo *patterns.Memo, b *RunBatch, whole func(ids []string) map[string]wholeRun) (marked, added []string, err error) {
	signals := b.signals.ids
	var signed []signedRun
	if len(signals) > 0 && whole != nil {
		if signed, err = signWhole(ctx, tx, stmts, keys, memo, signals, whole(signals)); err != nil {
			return nil, nil, fmt.Errorf("run index: patterns: %w", err)
		}
	}
	done := make(map[string]bool, len(signed))
	for _, r := range signed {
		done[r.id] = true
	}
	var mark []string
	for _, id := range signals {
		if !done[id] {
			mark = append(mark, id)
		}
	}
	if len(mark) > 0 {
		if err := stmts.exec(ctx, tx, stmtMarkSignals, idsJSON(mark)); err != nil {
			return nil, nil, fmt.Errorf("run index: patterns: %w", err)
		}
	}
	var others traceSet
	for _, ids := range [][]string{b.traces(), b.alerts.ids} {
		for _, id := range ids {
			if !b.signals.seen[id] {
				others.add(id)
			}
		}
	}
	marked = mark
	if len(others.ids) > 0 {
		rows, err := stmts.query(ctx, tx, stmtMarkOthers, idsJSON(others.ids))
		if err != nil {
			return nil, nil, fmt.Errorf("run index: patterns: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, nil, err
			}
			marked = append(marked, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	if added, err = writeSignatures(ctx, tx, stmts, known, signed); err != nil {
		return nil, nil, fmt.Errorf("run index: patterns: %w", err)
	}
	return marked, added, nil
}

// runLoader reads one run whole (DB.Run, WarmDB.Run).
type runLoader func(ctx context.Context, traceID string) (*store.Run, error)

// runPeeker reads the patterns.Fingerprint of a stored run without rebuilding it
// (WarmDB.fingerprint).
type runPeeker func(ctx context.Context, traceID string) (patterns.Fingerprint, error)

// signature computes a run's signature through the read model, or takes it from memo when the
// run's spans are those memo remembers it by (patterns.RunFingerprint), and remembers it.
func signature(ctx context.Context, load runLoader, keys []string, memo *patterns.Memo, traceID string) (patterns.Signature, string, error) {
	run, err := load(ctx, traceID)
	if err != nil {
		return patterns.Signature{}, "", err
	}
	fp := patterns.RunFingerprint(run)
	if sig, agent, ok := memo.Get(traceID, fp); ok {
		return sig, agent, nil
	}
	v, err := runview.Build(ctx, run, runview.Options{SessionKeys: keys})
	if err != nil {
		return patterns.Signature{}, "", err
	}
	sig, agent := patterns.FromView(v), patterns.Agent(v)
	memo.Put(traceID, fp, sig, agent)
	return sig, agent, nil
}

// signRuns computes and writes the signatures of the marked runs ids (after the commit that
// marked them). A run marked again meanwhile keeps its mark (the later write signs it); a run
// that cannot be read keeps its mark (a reader computes it). Errors are returned joined; the
// batch they follow is stored either way. A run memo remembers with the same spans is not
// signed again (the other tier signed it from its batch); peek, when not nil, gives a run's
// fingerprint from its stored rows, so such a run is not even read back.
func signRuns(ctx context.Context, db *sql.DB, stmts *stmtCache, known *variantSet, load runLoader, peek runPeeker, keys []string, memo *patterns.Memo, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT trace_id, dirty FROM run_patterns WHERE dirty > 0 AND trace_id IN (SELECT value FROM json_each(?))`, idsJSON(ids))
	if err != nil {
		return fmt.Errorf("run index: patterns: %w", err)
	}
	gen := map[string]int64{}
	var order []string
	for rows.Next() {
		var id string
		var g int64
		if err := rows.Scan(&id, &g); err != nil {
			rows.Close()
			return err
		}
		gen[id] = g
		order = append(order, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var out []signedRun
	var errs []error
	for _, id := range order {
		if peek != nil {
			if fp, err := peek(ctx, id); err == nil {
				if sig, agent, ok := memo.Get(id, fp); ok {
					out = append(out, signedRun{id: id, agent: agent, sig: sig, gen: gen[id]})
					continue
				}
			}
		}
		sig, agent, err := signature(ctx, load, keys, memo, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, fmt.Errorf("run %s: %w", id, err))
			}
			continue
		}
		out = append(out, signedRun{id: id, agent: agent, sig: sig, gen: gen[id]})
	}
	if len(out) == 0 {
		return errors.Join(errs...)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	added, err := writeSignatures(ctx, tx, stmts, known, out)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return errors.Join(append(errs, err)...)
	}
	known.add(added)
	return errors.Join(errs...)
}

// wholeRun is a marked run of a write transaction whose rows the batch holds: n span rows (hot:
// span rows; warm: summaries) and events key events (warm; the hot writer takes only runs with
// no log record), and view builds its runview.View from the batch as from the run Run would
// read back.
type wholeRun struct {
	n, events int
	view      func(ctx context.Context, opts runview.Options) (*runview.View, error)
	// fp identifies the spans run is built from (patterns.Memo); zero: not remembered
	fp patterns.Fingerprint
}

// signWhole returns the signatures of the runs ids (with a signal in a write transaction tx)
// whose every stored row is the batch's: the run index row in tx counts exactly the batch's rows,
// and no log record or key event beyond the batch's. wholeQuery selects (trace_id, stored rows,
// stored events) for the ids of a JSON array (stmtWhole). A run that is not whole, or whose
// signature cannot be built, is left out (indexPatterns marks it).
func signWhole(ctx context.Context, tx *sql.Tx, stmts *stmtCache, keys []string, memo *patterns.Memo, ids []string, batch map[string]wholeRun) ([]signedRun, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	in := make([]string, 0, len(batch))
	for _, id := range ids {
		if _, ok := batch[id]; ok {
			in = append(in, id)
		}
	}
	rows, err := stmts.query(ctx, tx, stmtWhole, idsJSON(in))
	if err != nil {
		return nil, err
	}
	whole := map[string]bool{}
	for rows.Next() {
		var id string
		var n, events int
		if err := rows.Scan(&id, &n, &events); err != nil {
			rows.Close()
			return nil, err
		}
		if b := batch[id]; b.n == n && b.events == events {
			whole[id] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []signedRun
	for _, id := range in {
		if !whole[id] {
			continue
		}
		b := batch[id]
		sig, agent, ok := memo.Get(id, b.fp)
		if !ok {
			v, err := b.view(ctx, runview.Options{SessionKeys: keys})
			if err != nil {
				continue
			}
			sig, agent = patterns.FromView(v), patterns.Agent(v)
			memo.Put(id, b.fp, sig, agent)
		}
		out = append(out, signedRun{id: id, agent: agent, sig: sig, gen: -1})
	}
	return out, nil
}

// signedRun is a run's signature and the mark it was computed at (gen; -1: in the transaction
// that marked it, which no other write can interleave).
type signedRun struct {
	id, agent string
	sig       patterns.Signature
	gen       int64
}

// writeSignatures stores, in tx, the signatures of runs, a statement per kind whatever their
// number (rows as JSON arrays, json_each): the rows of runs that do not fail are deleted; a run
// signed after the commit that marked it (gen >= 0) takes its pattern, variant and agent and loses
// its mark, unless the run was marked again since gen (then the later write signs it); a run
// signed in the transaction that wrote it (gen < 0: no other write can interleave) has its row
// inserted or replaced. A variant known stored (known) is not sent again; it returns the
// variants it stored, for known.add once tx is committed.
func writeSignatures(ctx context.Context, tx *sql.Tx, stmts *stmtCache, known *variantSet, runs []signedRun) ([]string, error) {
	var sigs, rows, upserts, gone, goneAt [][]any
	var added []string
	for _, r := range runs {
		switch {
		case r.sig.Failing():
			pid, vid, js := r.sig.Keys()
			if !known.has(vid) && !slices.Contains(added, vid) {
				sigs = append(sigs, []any{vid, pid, string(js)})
				added = append(added, vid)
			}
			if r.gen < 0 {
				upserts = append(upserts, []any{r.id, pid, vid, r.agent})
			} else {
				rows = append(rows, []any{r.id, pid, vid, r.agent, r.gen})
			}
		case r.gen < 0:
			gone = append(gone, []any{r.id})
		default:
			goneAt = append(goneAt, []any{r.id, r.gen})
		}
	}
	for _, w := range []struct {
		k    stmtKey
		rows [][]any
	}{{stmtSigGone, gone}, {stmtSigGoneAt, goneAt}, {stmtSigVariants, sigs}} {
		if len(w.rows) > 0 {
			if err := stmts.exec(ctx, tx, w.k, rowsJSON(w.rows)); err != nil {
				return nil, err
			}
		}
	}
	for _, w := range []struct {
		k    stmtKey
		rows [][]any
	}{{stmtSigRows, rows}, {stmtSigUpsert, upserts}} {
		if len(w.rows) > 0 {
			if err := stmts.exec(ctx, tx, w.k, patterns.SignatureVersion, rowsJSON(w.rows)); err != nil {
				return nil, err
			}
		}
	}
	return added, nil
}

// variantSetSize bounds a variantSet: a store's variants are far fewer (readbench's 10^6 runs
// hold 4 patterns; loadgen's planted faults a few dozen variants).
const variantSetSize = 4096

// variantSet remembers variant ids a file's pattern_signatures holds, added once the
// transaction that stored them is committed (nothing deletes a variant's row), so the writer
// sends each signature's JSON once, not with every failing run. A nil set knows none.
type variantSet struct{ c *lru.Cache[string, struct{}] }

func newVariantSet() *variantSet {
	c, err := lru.New[string, struct{}](variantSetSize)
	if err != nil { // only for a size <= 0
		panic(err)
	}
	return &variantSet{c: c}
}

func (v *variantSet) has(id string) bool { return v != nil && v.c.Contains(id) }

func (v *variantSet) add(ids []string) {
	if v == nil {
		return
	}
	for _, id := range ids {
		v.c.Add(id, struct{}{})
	}
}

// rowsJSON is rows as one JSON array of arrays (writeSignatures).
func rowsJSON(rows [][]any) string {
	b, _ := json.Marshal(rows)
	return string(b)
}

// hasTable reports whether db holds table name.
func hasTable(ctx context.Context, db queryer, name string) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, name)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	return rows.Next(), rows.Err()
}

// patternRuns streams f's runs from the index of db (package comment above), computing on the
// spot the signatures the index does not hold current; those runs come after the others.
func patternRuns(ctx context.Context, db *sql.DB, load runLoader, keys []string, tier string, f store.PatternFilter, yield func(store.PatternRun) error) error {
	has, err := hasTable(ctx, db, "run_patterns")
	if err != nil {
		return fmt.Errorf("sqlite %s tier: patterns: %w", tier, err)
	}
	join := `'', '', '', -1, 0 FROM runs r`
	if has {
		join = `COALESCE(p.pattern_id, ''), COALESCE(p.variant_id, ''), COALESCE(p.agent, ''), COALESCE(p.version, -1),
		  COALESCE(p.dirty, 0) FROM runs r LEFT JOIN run_patterns p ON p.trace_id = r.trace_id`
	}
	q := `SELECT r.trace_id, r.session_id, r.start_time_unix_nano, r.models, r.cost_usd, r.errors, r.alerts, r.roots, r.orphans, ` + join
	var where []string
	var args []any
	if !f.Since.IsZero() {
		where = append(where, `r.start_time_unix_nano >= ?`)
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where = append(where, `r.start_time_unix_nano < ?`)
		args = append(args, f.Until.UnixNano())
	}
	if f.TraceIDs != nil {
		// Looked up by primary key (runs.trace_id), then sorted: the page, not the store.
		where = append(where, `r.trace_id IN (SELECT value FROM json_each(?))`)
		args = append(args, idsJSON(f.TraceIDs))
	}
	if f.PatternID != "" && has {
		// Only the rows the loop below can put in the pattern: signed in it, to sign again
		// (marked, another version), or without a row but with what signs a run on the spot
		// (errors, alerts) or makes it incomplete. Passing runs, most of a store, stay in SQLite.
		where = append(where, `(p.pattern_id = ? OR p.dirty > 0 OR p.version != ?
		  OR p.trace_id IS NULL AND (r.errors > 0 OR r.alerts > 0 OR r.roots = 0 OR r.orphans > 0))`)
		args = append(args, f.PatternID, patterns.SignatureVersion)
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY r.start_time_unix_nano DESC, r.trace_id`
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("sqlite %s tier: patterns: %w", tier, err)
	}
	var later []store.PatternRun
	for rows.Next() {
		var r store.PatternRun
		var start, errs, alerts, roots, orphans, version, dirty int64
		var models string
		if err := rows.Scan(&r.TraceID, &r.SessionID, &start, &models, &r.CostUSD, &errs, &alerts, &roots, &orphans,
			&r.PatternID, &r.VariantID, &r.Agent, &version, &dirty); err != nil {
			rows.Close()
			return err
		}
		r.Start, r.Models, r.Tier = time.Unix(0, start).UTC(), splitModels(models), tier
		if r.SessionID == "" {
			r.SessionID = r.TraceID
		}
		switch {
		case version >= 0 && (dirty > 0 || version != patterns.SignatureVersion),
			version < 0 && (errs > 0 || alerts > 0):
			later = append(later, r) // computed below, once the rows are closed
			continue
		case version < 0 && (roots == 0 || orphans > 0):
			// incomplete only: no row, the flags are in the index row
			r.PatternID, r.VariantID, r.Signature = patterns.IncompleteOnly(roots, orphans)
		}
		if !f.Keep(r) {
			continue
		}
		if err := yield(r); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range later {
		sig, agent, err := signature(ctx, load, keys, nil, r.TraceID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("sqlite %s tier: signature of run %s: %w", tier, r.TraceID, err)
		}
		r.PatternID, r.VariantID, r.Agent = sig.ID(), sig.VariantID(), agent
		if sig.Failing() {
			r.Signature = sig.JSON()
		}
		if !f.Keep(r) {
			continue
		}
		if err := yield(r); err != nil {
			return err
		}
	}
	return nil
}

// patternSignatures reads the stored signatures of ids.
func patternSignatures(ctx context.Context, db *sql.DB, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if has, err := hasTable(ctx, db, "pattern_signatures"); err != nil || !has {
		return out, err
	}
	rows, err := db.QueryContext(ctx, `SELECT variant_id, signature FROM pattern_signatures WHERE variant_id IN (SELECT value FROM json_each(?))`, idsJSON(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, sig string
		if err := rows.Scan(&id, &sig); err != nil {
			return nil, err
		}
		out[id] = []byte(sig)
	}
	return out, rows.Err()
}

// PatternRuns implements store.PatternReader for the hot file.
func (d *DB) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	if d.version < 3 {
		return fmt.Errorf("sqlite hot tier: schema version %d has no run index: open it with the collector once to migrate", d.version)
	}
	return patternRuns(ctx, d.db, d.Run, d.sessionKeys, store.TierHot, f, yield)
}

// PatternSignatures implements store.PatternReader for the hot file.
func (d *DB) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	return patternSignatures(ctx, d.db, ids)
}

// PatternRuns implements store.PatternReader for the warm file.
func (w *WarmDB) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	if w.version < 2 {
		return fmt.Errorf("sqlite warm tier: schema version %d has no run index: open it with the collector once to migrate", w.version)
	}
	return patternRuns(ctx, w.db, w.Run, w.keys(), store.TierWarm, f, yield)
}

// PatternSignatures implements store.PatternReader for the warm file.
func (w *WarmDB) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	return patternSignatures(ctx, w.db, ids)
}

var (
	_ store.PatternReader = (*DB)(nil)
	_ store.PatternReader = (*WarmDB)(nil)
)

// batchRun is one run's spans as a committed batch held them, each with its resource and scope,
// by span id (a span sent twice in the batch is stored once, as its last copy).
type batchRun struct {
	spans map[pcommon.SpanID]batchSpan
}

type batchSpan struct {
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
	sp ptrace.Span
}

// batchRuns collects the spans of the runs ids from the requests of ws.
func batchRuns(ws []*traceWrite, ids []string) map[string]*batchRun {
	if len(ws) == 0 {
		return nil
	}
	want := make(map[pcommon.TraceID]string, len(ids))
	for _, id := range ids {
		if tid, err := otlpid.ParseTraceID(id); err == nil {
			want[tid] = id
		}
	}
	out := map[string]*batchRun{}
	for _, w := range ws {
		if w.td == (ptrace.Traces{}) {
			continue
		}
		for _, rs := range w.td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					id, ok := want[sp.TraceID()]
					if !ok || sp.SpanID().IsEmpty() {
						continue
					}
					b := out[id]
					if b == nil {
						b = &batchRun{spans: map[pcommon.SpanID]batchSpan{}}
						out[id] = b
					}
					b.spans[sp.SpanID()] = batchSpan{rs: rs, ss: ss, sp: sp}
				}
			}
		}
	}
	return out
}

// view is the run's runview.View as Build gives it for the run DB.Run reads back (which holds
// these spans, one resource a span, in start time then span id order; the view orders them the
// same whatever their order, store.OrderNodes), over the batch's own spans instead of a copy
// (runview.BuildNodes: the copy was the largest part of signing a whole run, BENCHMARKS.md
// "Failure patterns").
func (b *batchRun) view(ctx context.Context, traceID string, opts runview.Options) (*runview.View, error) {
	nodes := make([]*store.Node, 0, len(b.spans))
	for _, s := range b.spans {
		nodes = append(nodes, &store.Node{Span: s.sp, Resource: s.rs.Resource(), Scope: s.ss.Scope(), ResourceSpans: s.rs, ScopeSpans: s.ss})
	}
	return runview.BuildNodes(ctx, &store.Run{TraceID: traceID, Tier: store.TierHot}, nodes, opts)
}

// hotWholeQuery selects the stored span rows of the runs of a JSON array, and 1 for a run with a
// log record (signWhole: the batch path takes no run with one).
const hotWholeQuery = `SELECT r.trace_id, r.spans, EXISTS (SELECT 1 FROM logs l WHERE l.trace_id = r.trace_id)
  FROM runs r WHERE r.trace_id IN (SELECT value FROM json_each(?))`

// hotWholeRuns are the marked runs of the requests ws with their spans, each built as DB.Run
// reads it back (batchRun.run): signWhole signs those the batch holds whole, instead of reading
// them back and decompressing them, the cost of signing at ingest (BENCHMARKS.md, "Failure
// patterns").
func hotWholeRuns(ws []*traceWrite, marked []string) map[string]wholeRun {
	if len(marked) == 0 {
		return nil
	}
	out := map[string]wholeRun{}
	for id, b := range batchRuns(ws, marked) {
		r := wholeRun{n: len(b.spans), view: func(ctx context.Context, opts runview.Options) (*runview.View, error) {
			return b.view(ctx, id, opts)
		}}
		for _, s := range b.spans {
			r.fp.AddSpan(s.sp)
		}
		out[id] = r
	}
	return out
}
