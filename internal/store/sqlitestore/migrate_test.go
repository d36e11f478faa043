// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// v1DDL is the hot schema of version 1 (before cost_usd and unpriced).
var v1DDL = strings.NewReplacer("  cost_usd             REAL    NOT NULL DEFAULT 0,\n", "",
	"  unpriced             INTEGER NOT NULL DEFAULT 0,\n", "").Replace(v3DDL)

// v3DDL is the hot schema of version 3 (before the otlp codec columns of version 4).
var v3DDL = strings.NewReplacer(dictsDDL, "", framesDDL, "",
	"  otlp_codec           INTEGER NOT NULL DEFAULT 0,\n  otlp_dict            INTEGER NOT NULL DEFAULT 0,\n", "",
	",\n  otlp_codec           INTEGER NOT NULL DEFAULT 0,\n  otlp_dict            INTEGER NOT NULL DEFAULT 0\n", "\n").Replace(ddl)

// TestVersion1FileReadAndMigrated: a hot file written by a version 1 build is read as it is by a
// reader (cost 0, nothing written), and opened for writing it gains the cost columns, keeps its
// rows, and prices what is written from then on.
func TestVersion1FileReadAndMigrated(t *testing.T) {
	ctx := context.Background()
	require.NotContains(t, v1DDL, "cost_usd")
	path := filepath.Join(t.TempDir(), "hot.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(v1DDL + "PRAGMA user_version = 1;")
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO spans VALUES ('0123456789abcdef0123456789abcdef','0123456789abcdef','','s','old',0,1,2,0,'svc','llm','gpt-4.1',10,5,x'',1)`)
	require.NoError(t, err)
	v1Cols := columns(t, raw, "spans")
	require.NotContains(t, v1Cols, "cost_usd", "the version 1 table as SQLite holds it")
	require.NotContains(t, v1Cols, "unpriced")
	require.NoError(t, raw.Close())

	r, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Zero(t, rows[0].CostUSD, "a version 1 file has no cost to read")
	require.NoError(t, r.Close())

	prices, err := pricing.New(pricing.Config{Models: []pricing.Override{{Model: "gpt-4.1", InputMTok: 1000, OutputMTok: 1000}}})
	require.NoError(t, err)
	w, err := Open(path, Options{Prices: prices})
	require.NoError(t, err)
	var v int
	require.NoError(t, w.SQL().QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	// The migrated table has exactly the columns of a file created by this version, in order.
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh.db"), Options{})
	require.NoError(t, err)
	want := columns(t, fresh.SQL(), "spans")
	require.NoError(t, fresh.Close())
	assert.Equal(t, want, columns(t, w.SQL(), "spans"))
	assert.Equal(t, append(v1Cols, "cost_usd", "unpriced", "otlp_codec", "otlp_dict"), want, "version 2 adds the cost columns, 4 the codec")
	run := storetest.Run{Seed: "new", Service: "svc", Model: "gpt-4.1", Start: 1_000_000, LLMCalls: 1}
	_, err = w.WriteTraces(ctx, storetest.Traces(run))
	require.NoError(t, err)
	rows, err = w.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 2, "the version 1 row is kept")
	byID := map[string]store.RunSummary{}
	for _, r := range rows {
		byID[r.TraceID] = r
	}
	assert.Zero(t, byID["0123456789abcdef0123456789abcdef"].CostUSD)
	assert.Positive(t, byID[storetest.TraceID("new").String()].CostUSD, "priced when written, with the override")
	require.NoError(t, w.Close())
}

// columns returns the column names of table as SQLite reports them (PRAGMA table_info).
func columns(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out, "table %s exists", table)
	return out
}

// downgradeToV3 turns a hot file written by this build into the shape a version 3 build wrote:
// the otlp columns decoded to the protobuf, no codec columns, no zstd_dicts, no span_orphans, the
// indexes of version 3, user_version 3.
func downgradeToV3(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(path, Options{})
	require.NoError(t, err)
	type row struct {
		table string
		id    int64
		raw   []byte
	}
	var out []row
	type stored struct {
		id, codec, dict int64
		buf             []byte
	}
	for _, table := range []string{"spans", "logs"} {
		rows, err := db.SQL().QueryContext(ctx, `SELECT rowid, otlp_codec, otlp_dict, otlp FROM `+table)
		require.NoError(t, err)
		var all []stored
		for rows.Next() {
			var s stored
			require.NoError(t, rows.Scan(&s.id, &s.codec, &s.dict, &s.buf))
			all = append(all, s)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		fr := frameReader{c: db.codec, q: db.SQL()}
		for _, s := range all {
			raw, err := fr.span(ctx, s.codec, s.dict, s.buf)
			require.NoError(t, err)
			out = append(out, row{table, s.id, raw})
		}
	}
	for _, r := range out {
		_, err := db.SQL().ExecContext(ctx, `UPDATE `+r.table+` SET otlp = ? WHERE rowid = ?`, r.raw, r.id)
		require.NoError(t, err)
	}
	_, err = db.SQL().ExecContext(ctx, `DROP TRIGGER spans_frames_delete; DROP TABLE span_frames;
	  ALTER TABLE spans DROP COLUMN otlp_codec; ALTER TABLE spans DROP COLUMN otlp_dict;
	  ALTER TABLE logs DROP COLUMN otlp_codec; ALTER TABLE logs DROP COLUMN otlp_dict; DROP TABLE zstd_dicts;
	  DROP TRIGGER spans_orphans_delete; DROP TABLE span_orphans;
	  CREATE INDEX spans_start ON spans (start_time_unix_nano);`+refsBeforeV6+`
	  PRAGMA user_version = 3;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
}

// TestVersion4FileMigrated: a version 4 file (run index recomputed per batch: no span_orphans;
// spans_start and payload_refs_uri indexes) holding a run whose children wait for their root is
// read as it is by a reader; opened for writing it gets span_orphans built from its rows and
// loses the two indexes, and the root arriving then completes the run.
func TestVersion4FileMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	r := storetest.Run{Seed: "v4", Session: "conv-v4", Service: "svc", Model: "gpt-4.1", Start: 1_000_000, LLMCalls: 3}
	children, root := splitChildrenFirst(r)
	w, err := Open(path, Options{})
	require.NoError(t, err)
	_, err = w.WriteTraces(ctx, children)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`DROP TRIGGER spans_orphans_delete; DROP TABLE span_orphans;
	  CREATE INDEX spans_start ON spans (start_time_unix_nano);` + refsBeforeV6 + `
	  PRAGMA user_version = 4;`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	ro, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	rows, err := ro.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.True(t, rows[0].Incomplete)
	require.NoError(t, ro.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var waiting int
	require.NoError(t, w.SQL().QueryRow(`SELECT spans FROM span_orphans WHERE trace_id = ?`, storetest.TraceID("v4").String()).Scan(&waiting))
	assert.Equal(t, 3, waiting, "the migration found the three children waiting for their root")
	var n int
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name IN ('spans_start', 'payload_refs_uri')`).Scan(&n))
	assert.Zero(t, n, "indexes no query uses are dropped")
	_, err = w.WriteTraces(ctx, root)
	require.NoError(t, err)
	rows, err = w.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.False(t, rows[0].Incomplete, "the root completes the run")
	assert.EqualValues(t, 4, rows[0].Spans)
	want, err := listRuns(ctx, w.SQL(), store.RunFilter{}, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
	require.NoError(t, err)
	assert.Equal(t, want, rows)
}

// refsBeforeV6 turns payload_refs into its shape before version 6 (trace_id, row_id, uri, with
// the uri index versions 2 to 4 had), keeping every reference.
const refsBeforeV6 = `
DROP TRIGGER spans_payload_refs_delete; DROP TRIGGER logs_payload_refs_delete; DROP VIEW payload_ref_uris;
CREATE TABLE payload_refs_old (trace_id TEXT NOT NULL, row_id TEXT NOT NULL, uri TEXT NOT NULL,
  PRIMARY KEY (trace_id, row_id, uri)) WITHOUT ROWID;
INSERT INTO payload_refs_old SELECT r.trace_id, r.row_id, p.prefix || r.name FROM payload_refs r JOIN payload_prefixes p ON p.id = r.prefix_id;
DROP TABLE payload_refs; DROP TABLE payload_prefixes; ALTER TABLE payload_refs_old RENAME TO payload_refs;
CREATE INDEX payload_refs_uri ON payload_refs (uri);` + refsTriggers

// TestVersion6FileReadAndMigrated: a version 6 file (each span row its own zstd frame, no
// span_frames) is read as it is by a reader; opened for writing it gains span_frames, keeps its
// rows as they are, stores new runs' spans in frames, reads both, and a retried old span and an
// erased new run leave no frame behind.
func TestVersion6FileReadAndMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := Open(path, Options{})
	require.NoError(t, err)
	w.rowFrames = true // the version 6 writer
	old := fixtureRuns("v6", 10)
	want := spanProtos(t, old)
	_, err = w.WriteTraces(ctx, old)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`DROP TRIGGER spans_frames_delete; DROP TABLE span_frames; PRAGMA user_version = 6;`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	ro, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	requireRunsRead(t, ro, want)
	require.NoError(t, ro.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var v int
	require.NoError(t, w.SQL().QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	fresh := fixtureRuns("v7", 10)
	for k, b := range spanProtos(t, fresh) {
		want[k] = b
	}
	_, err = w.WriteTraces(ctx, fresh)
	require.NoError(t, err)
	_, err = w.WriteTraces(ctx, old) // a retry of the old rows: replaced, now in frames
	require.NoError(t, err)
	requireRunsRead(t, w, want)
	var oldRows, framed, frames int
	require.NoError(t, w.SQL().QueryRow(`SELECT SUM(otlp_codec != 3), SUM(otlp_codec = 3), (SELECT COUNT(*) FROM span_frames) FROM spans`).Scan(&oldRows, &framed, &frames))
	assert.Zero(t, oldRows, "the retried rows were replaced")
	assert.Equal(t, 100, framed)
	assert.Equal(t, 20, frames, "one frame per run and request")
	_, err = w.Erase(ctx, store.Erasure{TraceIDs: []string{storetest.TraceID("v7-0").String()}})
	require.NoError(t, err)
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM span_frames`).Scan(&frames))
	assert.Equal(t, 19, frames, "an erased run's frame goes with its rows")
	rows, err := w.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	agg, err := listRuns(ctx, w.SQL(), store.RunFilter{}, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
	require.NoError(t, err)
	assert.Equal(t, agg, rows)
}
