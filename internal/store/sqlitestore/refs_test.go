// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// refURIs are payload references of the shapes in use: objects in packs, single objects, an S3
// key (storetest's LLM spans add file:///payloads/ab/cd).
var refURIs = []string{
	"file:///data/blobs/packs/18ecea125b7094be-84424978a801.pack#sha256/000a041b7c6a245ee8ffb8c6e2d51d94881262aefdc67c05bfcf374efcd46acb.manifest.zst",
	"file:///data/blobs/packs/18ecea125b7094be-84424978a801.pack#sha256/0013561a77b5cc5158bb0132a23be5b847153280d9973e1c8b69d70f4782ad64",
	"file:///data/blobs/packs/29ecea125b7094be-84424978a802.pack#sha256/0013561a77b5cc5158bb0132a23be5b847153280d9973e1c8b69d70f4782ad64",
	"file:///payloads/sha256/ab/cd/abcd0123",
	"s3://bucket/prefix/sha256/ef/01/ef0123?region=eu-west-1",
}

// refsRuns writes runs whose LLM spans reference refURIs (several per span, shared across runs).
func writeRefRuns(t *testing.T, db *DB) {
	t.Helper()
	td := storetest.Traces()
	for i := 0; i < 6; i++ {
		storetest.Add(td, storetest.Run{Seed: fmt.Sprintf("refs-%d", i), Session: fmt.Sprintf("conv-r%d", i%2), Service: "svc", Model: "gpt-4.1", Start: indexT0 + int64(i), LLMCalls: 2})
	}
	n := 0
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		spans := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			a := spans.At(k).Attributes()
			a.PutStr("gen_ai.input.messages_ref", refURIs[n%len(refURIs)])
			a.PutStr("gen_ai.system_instructions_ref", refURIs[(n+3)%len(refURIs)])
			n++
		}
	}
	_, err := db.WriteTraces(context.Background(), td)
	require.NoError(t, err)
}

func listRefs(t *testing.T, l store.RefLister) []string {
	t.Helper()
	var out []string
	require.NoError(t, l.EachPayloadRef(context.Background(), func(u string) bool { out = append(out, u); return true }))
	return out
}

func refRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a, b, c string
		require.NoError(t, rows.Scan(&a, &b, &c))
		out = append(out, a+" "+b+" "+c)
	}
	require.NoError(t, rows.Err())
	sort.Strings(out)
	return out
}

// TestPayloadRefsSplitAndConverted: references are stored as a shared prefix and a name; listing
// them (the payload sweep's live set) gives exactly the URIs of the stored spans (the OTLP scan),
// in order; a file whose payload_refs has the shape before version 6 is listed as it is
// read-only and converted, every (trace, row, URI) kept, when opened for writing; an erasure
// still reports the URIs its rows held.
func TestPayloadRefsSplitAndConverted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := Open(path, Options{})
	require.NoError(t, err)
	writeRefRuns(t, w)
	want := append([]string{"file:///payloads/ab/cd"}, refURIs...)
	sort.Strings(want)
	scanned := map[string]bool{}
	require.NoError(t, w.eachStoredRef(ctx, w.db, func(_, _, u string) error { scanned[u] = true; return nil }))
	require.Len(t, scanned, len(want), "the fixture references every URI")
	assert.Equal(t, want, listRefs(t, w))
	var prefixes int
	require.NoError(t, w.db.QueryRow(`SELECT COUNT(*) FROM payload_prefixes`).Scan(&prefixes))
	assert.Equal(t, 5, prefixes, "two packs, two single-object directories, an S3 directory")
	byRow := refRows(t, w.db, `SELECT trace_id, row_id, uri FROM payload_ref_uris`)
	require.NoError(t, w.Close())

	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(refsBeforeV6 + `PRAGMA user_version = 5;`)
	require.NoError(t, err)
	assert.Equal(t, byRow, refRows(t, raw, `SELECT trace_id, row_id, uri FROM payload_refs`), "the version 5 shape holds the same references")
	require.NoError(t, raw.Close())

	r, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	assert.Equal(t, want, listRefs(t, r), "a version 5 file read as it is")
	require.NoError(t, r.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	assert.Equal(t, byRow, refRows(t, w.db, `SELECT trace_id, row_id, uri FROM payload_ref_uris`), "converted, every reference kept")
	assert.Equal(t, want, listRefs(t, w))
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh.db"), Options{})
	require.NoError(t, err)
	assert.Equal(t, columns(t, fresh.db, "payload_refs"), columns(t, w.db, "payload_refs"))
	require.NoError(t, fresh.Close())
	var n int
	require.NoError(t, w.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name IN ('payload_refs_v5', 'payload_refs_uri')`).Scan(&n))
	assert.Zero(t, n)

	// The triggers came back: deleting rows drops their references; an erasure reports its URIs.
	ids, err := w.SessionTraces(ctx, "conv-r0")
	require.NoError(t, err)
	require.Len(t, ids, 3)
	removed, err := w.Erase(ctx, store.Erasure{Session: "conv-r0", TraceIDs: ids})
	require.NoError(t, err)
	assert.Positive(t, removed.Counts["payload_refs"])
	assert.NotEmpty(t, removed.PayloadRefs)
	for _, u := range removed.PayloadRefs {
		assert.Contains(t, want, u)
	}
	erased := map[string]bool{}
	for _, id := range ids {
		erased[id] = true
	}
	var kept []string
	for _, r := range byRow {
		if !erased[r[:32]] {
			kept = append(kept, r)
		}
	}
	require.NotEqual(t, len(byRow), len(kept))
	assert.Equal(t, kept, refRows(t, w.db, `SELECT trace_id, row_id, uri FROM payload_ref_uris`), "the references of the erased runs went with their spans")
	scanned = map[string]bool{}
	require.NoError(t, w.eachStoredRef(ctx, w.db, func(_, _, u string) error { scanned[u] = true; return nil }))
	live := listRefs(t, w)
	assert.Len(t, live, len(scanned), "the live set is what the remaining spans reference")
	for _, u := range live {
		assert.True(t, scanned[u], u)
	}
}

// TestPayloadRefInvalidUTF8Kept: a reference whose URI is not valid UTF-8 is stored byte for
// byte (the batched insert passes references as JSON, which would replace the invalid bytes).
func TestPayloadRefInvalidUTF8Kept(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetTraceID(storetest.TraceID("utf8"))
	span.SetSpanID(pcommon.SpanID{1})
	odd := "file:///payloads/\xff\xfe/x\xc3"
	span.Attributes().PutStr("gen_ai.prompt_ref", odd)
	span.Attributes().PutStr("gen_ai.completion_ref", "file:///payloads/ok")
	_, err = db.WriteTraces(context.Background(), td)
	require.NoError(t, err)
	assert.Equal(t, []string{"file:///payloads/ok", odd}, listRefs(t, db))
}
