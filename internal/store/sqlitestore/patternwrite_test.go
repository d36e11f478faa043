// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
)

// hotWithPatternRows is a new hot file whose run_patterns holds rows (SQL VALUES tuples of
// trace_id, pattern_id, variant_id, agent, version, dirty), closed when t ends.
func hotWithPatternRows(t *testing.T, rows string) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.db.Exec(`INSERT INTO run_patterns (trace_id, pattern_id, variant_id, agent, version, dirty) VALUES ` + rows); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestWriteSignaturesKeepsLaterMarks: signatures computed at a mark are stored only where the
// run was not marked again since (a later write signs it), a run that no longer fails loses its
// row, and those computed in the transaction that wrote the run (gen -1) are stored whatever the
// mark, inserted when the run has no row yet (indexPatterns does not mark a run it signs whole).
func TestWriteSignaturesKeepsLaterMarks(t *testing.T) {
	ctx := context.Background()
	db := hotWithPatternRows(t, `('a','','','',0,1), ('b','','','',0,2), ('c','','','',0,1), ('d','old','old','x',1,3), ('e','','','',0,5), ('f','','','',0,1)`)
	failing := patterns.Signature{Version: patterns.SignatureVersion, FinishReasons: []string{"length"}}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = writeSignatures(ctx, tx, nil, nil, []signedRun{
		{id: "a", agent: "support", sig: failing, gen: 1},               // current: stored
		{id: "b", agent: "support", sig: failing, gen: 1},               // marked again (2): kept marked
		{id: "c", agent: "support", sig: patterns.Signature{}, gen: 1},  // passes: row deleted
		{id: "d", agent: "support", sig: patterns.Signature{}, gen: 2},  // passes, marked again: kept
		{id: "e", agent: "support", sig: failing, gen: -1},              // in the marking transaction: stored
		{id: "f", agent: "support", sig: patterns.Signature{}, gen: -1}, // in it, passes: deleted
		{id: "g", agent: "support", sig: failing, gen: -1},              // in it, no row yet (never marked): inserted
		{id: "h", agent: "support", sig: patterns.Signature{}, gen: -1}, // in it, passes, no row: none
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	rows, err := db.db.QueryContext(ctx, `SELECT trace_id, pattern_id || '/' || agent || '/' || dirty FROM run_patterns`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		got[id] = v
	}
	want := map[string]string{"a": failing.ID() + "/support/0", "b": "//2", "d": "old/x/3", "e": failing.ID() + "/support/0", "g": failing.ID() + "/support/0"}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("run %s: %q, want %q", id, got[id], v)
		}
	}
	var sigs int
	if err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM pattern_signatures WHERE variant_id = ? AND signature = ?`,
		failing.VariantID(), string(failing.JSON())).Scan(&sigs); err != nil || sigs != 1 {
		t.Fatalf("pattern_signatures: %d rows of the variant (%v)", sigs, err)
	}
}

// TestReadBackSignatureServesTheOtherTier: a run whose spans one tier receives in two requests is
// read back and signed after the second commit (signRuns); the other tier, receiving the same
// spans in one batch, takes that signature from the shared memo instead of computing it again,
// and the two tiers store the same pattern. Either way round.
func TestReadBackSignatureServesTheOtherTier(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	memo := patterns.NewMemo(0)
	hot, err := Open(filepath.Join(dir, "hot.db"), Options{Memo: memo})
	if err != nil {
		t.Fatal(err)
	}
	defer hot.Close()
	warm, err := OpenWarm(filepath.Join(dir, "warm.db"), Options{Memo: memo})
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	toWarm := func(td ptrace.Traces) {
		t.Helper()
		if err := warm.WriteRecords(ctx, warm.TraceRecords(store.TrimTraces(td, nil))); err != nil {
			t.Fatal(err)
		}
	}
	toHot := func(td ptrace.Traces) {
		t.Helper()
		if _, err := hot.WriteTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct {
		name string
		send func(first, second, both ptrace.Traces)
	}{
		// the hot writer reads the split run back; the warm takes it from the memo
		{"split in the hot tier", func(first, second, both ptrace.Traces) { toHot(first); toHot(second); toWarm(both) }},
		// the warm writer reads it back; the hot takes it from the memo
		{"split in the warm tier", func(first, second, both ptrace.Traces) { toWarm(first); toWarm(second); toHot(both) }},
		// the hot signs it whole; the warm finds it by the fingerprint of its stored summaries,
		// without reading the run back
		{"split in the warm tier, signed by the hot first", func(first, second, both ptrace.Traces) { toHot(both); toWarm(first); toWarm(second) }},
	} {
		first, second, both := splitFailingRun(byte(i + 1))
		hits0, _ := memo.Stats()
		c.send(first, second, both)
		if hits, _ := memo.Stats(); hits != hits0+1 {
			t.Errorf("%s: %d memo hits, want 1 (the run signed once)", c.name, hits-hits0)
		}
	}
	// The warm writer's read-back of a run the memo holds by its stored summaries' fingerprint
	// does not rebuild the run: marked again, it is signed without a load.
	_, _, both := splitFailingRun(3)
	id := traceIDsOf(both)
	var ids []string
	for k := range id {
		ids = append(ids, k)
	}
	if _, err := warm.db.ExecContext(ctx, `UPDATE run_patterns SET dirty = 1 WHERE trace_id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	noLoad := func(context.Context, string) (*store.Run, error) {
		t.Errorf("run %s read back although the memo holds its signature", ids[0])
		return nil, store.ErrNotFound
	}
	if err := signRuns(ctx, warm.db, &warm.stmts, warm.variants, noLoad, warm.fingerprint, warm.keys(), memo, ids); err != nil {
		t.Fatal(err)
	}
	const row = "pattern_id || '/' || dirty"
	h, w := runPatternRows(t, hot.db, row), runPatternRows(t, warm.db, row)
	if len(h) != 3 || fmt.Sprint(h) != fmt.Sprint(w) {
		t.Fatalf("hot %v, warm %v: want the same three signed runs", h, w)
	}
	checkStoredAsReadBack(t, hot.db, hot.Run, hot.sessionKeys)
	checkStoredAsReadBack(t, warm.db, warm.Run, warm.sessionKeys)
	// A run with an alert is fingerprinted as nothing: the alert is signed from and is not in
	// the fingerprint, so the memo can never answer for it.
	if fp, err := warm.fingerprint(ctx, ids[0]); err != nil || fp == (patterns.Fingerprint{}) {
		t.Fatalf("fingerprint of the stored run: %v, %v", fp, err)
	}
	alert := plog.NewLogs()
	lr := alert.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTraceID(pcommon.TraceID{15: 3})
	lr.SetEventName("runagain.alert")
	lr.Attributes().PutStr("runagain.alert.kind", "loop")
	if err := warm.WriteLogs(ctx, alert); err != nil {
		t.Fatal(err)
	}
	if fp, err := warm.fingerprint(ctx, ids[0]); err != nil || fp != (patterns.Fingerprint{}) {
		t.Fatalf("fingerprint of the run with an alert: %v, %v; want none", fp, err)
	}
}

// splitFailingRun is one failing run (trace id ending in b): an agent span in first, its failed
// tool call in second, both spans in both.
func splitFailingRun(b byte) (first, second, both ptrace.Traces) {
	tid := pcommon.TraceID{15: b}
	start := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	add := func(td ptrace.Traces, root bool) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "support")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(2 * time.Second)))
		if root {
			sp.SetSpanID(pcommon.SpanID{7: 1})
			sp.SetName("invoke_agent support")
			sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
			return
		}
		sp.SetSpanID(pcommon.SpanID{7: 2})
		sp.SetParentSpanID(pcommon.SpanID{7: 1})
		sp.SetName("execute_tool lookup_order")
		sp.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		sp.Attributes().PutStr("gen_ai.tool.name", "lookup_order")
		sp.Attributes().PutStr("error.type", "TimeoutError")
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("order 4417 timed out after 30s")
	}
	first, second, both = ptrace.NewTraces(), ptrace.NewTraces(), ptrace.NewTraces()
	add(first, true)
	add(second, false)
	add(both, true)
	add(both, false)
	return first, second, both
}

// TestWriteSignaturesSendsAVariantOnce: a variant the file is known to hold (variantSet) is not
// sent again, the runs still take it; a new one shared by two runs is stored once and returned
// once, for the caller to add after its commit.
func TestWriteSignaturesSendsAVariantOnce(t *testing.T) {
	ctx := context.Background()
	db := hotWithPatternRows(t, `('a','','','',0,1), ('b','','','',0,1), ('c','','','',0,1)`)
	length := patterns.Signature{Version: patterns.SignatureVersion, FinishReasons: []string{"length"}}
	filter := patterns.Signature{Version: patterns.SignatureVersion, FinishReasons: []string{"content_filter"}}
	known := newVariantSet()
	known.add([]string{length.VariantID()}) // as if stored by an earlier commit (it is not)
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	added, err := writeSignatures(ctx, tx, &db.stmts, known, []signedRun{
		{id: "a", agent: "x", sig: length, gen: -1},
		{id: "b", agent: "x", sig: filter, gen: -1},
		{id: "c", agent: "x", sig: filter, gen: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(added) != fmt.Sprint([]string{filter.VariantID()}) {
		t.Fatalf("added %v, want only %s", added, filter.VariantID())
	}
	got := runPatternRows(t, db.db, "variant_id")
	if got["a"] != length.VariantID() || got["b"] != filter.VariantID() || got["c"] != filter.VariantID() {
		t.Fatalf("rows %v", got)
	}
	var n int
	if err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM pattern_signatures WHERE variant_id = ?`, length.VariantID()).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the known variant was sent again: %d rows (%v)", n, err)
	}
	if err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM pattern_signatures WHERE variant_id = ?`, filter.VariantID()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the new variant: %d rows (%v)", n, err)
	}
}
