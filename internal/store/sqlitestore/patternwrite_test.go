// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/runagain/runagain/internal/patterns"
)

// TestWriteSignaturesKeepsLaterMarks: signatures computed at a mark are stored only where the
// run was not marked again since (a later write signs it), a run that no longer fails loses its
// row, and those computed in the marking transaction (gen -1) are stored whatever the mark.
func TestWriteSignaturesKeepsLaterMarks(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.db.ExecContext(ctx, `INSERT INTO run_patterns (trace_id, pattern_id, variant_id, agent, version, dirty) VALUES
	  ('a','','','',0,1), ('b','','','',0,2), ('c','','','',0,1), ('d','old','old','x',1,3), ('e','','','',0,5), ('f','','','',0,1)`); err != nil {
		t.Fatal(err)
	}
	failing := patterns.Signature{Version: patterns.SignatureVersion, FinishReasons: []string{"length"}}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = writeSignatures(ctx, tx, []signedRun{
		{id: "a", agent: "support", sig: failing, gen: 1},               // current: stored
		{id: "b", agent: "support", sig: failing, gen: 1},               // marked again (2): kept marked
		{id: "c", agent: "support", sig: patterns.Signature{}, gen: 1},  // passes: row deleted
		{id: "d", agent: "support", sig: patterns.Signature{}, gen: 2},  // passes, marked again: kept
		{id: "e", agent: "support", sig: failing, gen: -1},              // in the marking transaction: stored
		{id: "f", agent: "support", sig: patterns.Signature{}, gen: -1}, // in it, passes: deleted
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
	want := map[string]string{"a": failing.ID() + "/support/0", "b": "//2", "d": "old/x/3", "e": failing.ID() + "/support/0"}
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
