// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// TestWriteTracesRetriesAcrossChunks: a request of several multi-row INSERTs (chunkRows: 128,
// 64, ... rows) holding spans stored by an earlier request and the same span twice (in one chunk
// and in two chunks) stores each span once, as its last copy in the request, with exactly that
// copy's payload references; the run index equals the aggregate of the span rows, and every
// frame counts the rows pointing into it. So too when new rows do not get consecutive rowids
// (the table holds the largest rowid: SQLite picks new ones at random), where the writer cannot
// tell its rows by rowid and replaces every span of the chunk.
func TestWriteTracesRetriesAcrossChunks(t *testing.T) {
	for _, scattered := range []bool{false, true} {
		t.Run(map[bool]string{false: "consecutive rowids", true: "random rowids"}[scattered], func(t *testing.T) {
			testWriteTracesRetriesAcrossChunks(t, scattered)
		})
	}
}

func testWriteTracesRetriesAcrossChunks(t *testing.T, scattered bool) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	reqs := benchRequests(3, 5) // 256 spans each, with payload references
	_, err = db.WriteTraces(ctx, reqs[0])
	require.NoError(t, err)
	if scattered {
		_, err = db.SQL().Exec(`INSERT INTO spans (rowid, trace_id, span_id, parent_span_id, session_id, name, kind,
		  start_time_unix_nano, end_time_unix_nano, status_code, service_name, genai_kind, model, input_tokens, output_tokens,
		  otlp, ingested_unix_nano) VALUES (9223372036854775807, 'ffffffffffffffffffffffffffffffff', 'ffffffffffffffff', '', '', 'x',
		  0, 0, 0, 0, '', 'other', '', 0, 0, x'', 0)`)
		require.NoError(t, err)
	}

	// The retry: every other span of reqs[0], the spans of reqs[1], and span 3 of reqs[1] again
	// (the same chunk) and span 200 of reqs[1] again at the end (another chunk), its
	// reference changed.
	mixed := ptrace.NewTraces()
	reqs[0].ResourceSpans().At(0).CopyTo(mixed.ResourceSpans().AppendEmpty())
	mixed.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func() func(ptrace.Span) bool {
		i := 0
		return func(ptrace.Span) bool { i++; return i%2 == 0 }
	}())
	second := mixed.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	from := reqs[1].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < from.Len(); i++ {
		from.At(i).CopyTo(second.AppendEmpty())
		if i == 5 {
			from.At(3).CopyTo(second.AppendEmpty())
		}
	}
	last := second.AppendEmpty()
	from.At(200).CopyTo(last)
	last.Attributes().PutStr("gen_ai.output.messages_ref", "s3://runagain-payloads/other/packs/x.pack#replaced")
	require.Greater(t, second.Len(), maxChunkRows+64)
	rejected, err := db.WriteTraces(ctx, mixed)
	require.NoError(t, err)
	require.Empty(t, rejected)
	_, err = db.WriteTraces(ctx, reqs[2]) // and a request of new spans after it
	require.NoError(t, err)
	if scattered {
		_, err = db.SQL().Exec(`DELETE FROM spans WHERE trace_id = 'ffffffffffffffffffffffffffffffff'`)
		require.NoError(t, err)
	}

	var spans int
	require.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM spans`).Scan(&spans))
	assert.Equal(t, 3*256, spans)

	// payload_refs holds exactly the references of the stored rows.
	want := map[string]bool{}
	require.NoError(t, db.eachStoredRef(ctx, db.SQL(), func(trace, row, uri string) error {
		want[trace+" "+row+" "+uri] = true
		return nil
	}))
	var wantRows []string
	for k := range want {
		wantRows = append(wantRows, k)
	}
	sort.Strings(wantRows)
	assert.Equal(t, wantRows, refRows(t, db.SQL(), `SELECT trace_id, row_id, uri FROM payload_ref_uris`))
	assert.Contains(t, want, last.TraceID().String()+" "+last.SpanID().String()+" s3://runagain-payloads/other/packs/x.pack#replaced",
		"the last copy of a span in the request is the one stored")

	rows, err := db.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	agg, err := listRuns(ctx, db.SQL(), store.RunFilter{}, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
	require.NoError(t, err)
	for _, rs := range [][]store.RunSummary{rows, agg} { // sums in another order differ in the last bits
		for i := range rs {
			rs[i].CostUSD = math.Round(rs[i].CostUSD*1e9) / 1e9
		}
	}
	assert.Equal(t, agg, rows)
	var framed, live int
	require.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM spans WHERE otlp_codec = 3`).Scan(&framed))
	require.NoError(t, db.SQL().QueryRow(`SELECT COALESCE(SUM(spans), 0) FROM span_frames`).Scan(&live))
	assert.Equal(t, framed, live)
}

// TestNewFilePageSize: a new hot file has 16 KiB pages (hotPageSize) and checkpoints its WAL
// every walCheckpointBytes; a file made with 4 KiB pages (before) keeps them, is written and
// reads back.
func TestNewFilePageSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pragmas := func(db *DB) (page, autockpt int) {
		require.NoError(t, db.SQL().QueryRow(`PRAGMA page_size`).Scan(&page))
		require.NoError(t, db.SQL().QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&autockpt))
		return page, autockpt
	}
	db, err := Open(filepath.Join(dir, "new.db"), Options{})
	require.NoError(t, err)
	page, ckpt := pragmas(db)
	assert.Equal(t, 16384, page)
	assert.Equal(t, 1024, ckpt)
	require.NoError(t, db.Close())

	old := filepath.Join(dir, "old.db")
	raw, err := sql.Open("sqlite", "file:"+old+"?_pragma=page_size(4096)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	_, err = raw.Exec(`CREATE TABLE probe (x)`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	db, err = Open(old, Options{})
	require.NoError(t, err)
	page, ckpt = pragmas(db)
	assert.Equal(t, 4096, page)
	assert.Equal(t, 4096, ckpt)
	td := benchRequests(1, 3)[0]
	_, err = db.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ro, err := Open(old, Options{ReadOnly: true})
	require.NoError(t, err)
	defer ro.Close()
	run, err := ro.Run(ctx, td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String())
	require.NoError(t, err)
	assert.Positive(t, run.Traces.SpanCount())
}

// TestPrefixIDOfRolledBackInsert: a payload prefix first inserted in a transaction that rolls
// back is not remembered (its id may be given to another prefix): the next write stores its
// references under the prefix's committed id, and they list as written.
func TestPrefixIDOfRolledBackInsert(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.SQL().BeginTx(ctx, nil)
	require.NoError(t, err)
	var refs refBatch
	refs.add("t1", "s1", "s3://bucket/a/one")
	require.NoError(t, db.flushRefs(ctx, tx, &refs))
	require.NoError(t, tx.Rollback())
	// Another prefix takes the id first; then the rolled back one is written.
	for _, uri := range []string{"s3://bucket/b/two", "s3://bucket/a/one"} {
		tx, err := db.SQL().BeginTx(ctx, nil)
		require.NoError(t, err)
		var refs refBatch
		refs.add("t1", "s1", uri)
		require.NoError(t, db.flushRefs(ctx, tx, &refs))
		require.NoError(t, tx.Commit())
		db.committedRefs(&refs)
	}
	assert.Equal(t, []string{"s3://bucket/a/one", "s3://bucket/b/two"}, listRefs(t, db))
}
