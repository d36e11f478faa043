// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// spanProtos maps each span id of td to the protobuf of its single-span request (what the hot
// tier stores for it, before encoding).
func spanProtos(t *testing.T, td ptrace.Traces) map[string][]byte {
	t.Helper()
	var m ptrace.ProtoMarshaler
	out := map[string][]byte{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				buf, err := m.MarshalTraces(store.SpanTraces(rs, ss, s))
				require.NoError(t, err)
				out[s.TraceID().String()+"/"+s.SpanID().String()] = buf
			}
		}
	}
	return out
}

// requireRunsRead reads every run of want (span protobufs by trace/span id) through r.Run and
// asserts each span comes back byte for byte.
func requireRunsRead(t *testing.T, r store.Reader, want map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	traces := map[string]bool{}
	for k := range want {
		traces[k[:32]] = true
	}
	got := map[string][]byte{}
	for id := range traces {
		run, err := r.Run(ctx, id)
		require.NoError(t, err, id)
		for k, v := range spanProtos(t, run.Traces) {
			got[k] = v
		}
	}
	require.Equal(t, len(want), len(got))
	for k, v := range want {
		require.True(t, bytes.Equal(v, got[k]), "span %s reads back as written", k)
	}
}

type codecCount struct{ codec, dict, rows, bytes int64 }

func codecCounts(t *testing.T, db *sql.DB) []codecCount {
	t.Helper()
	// A span frame (version 7) counts with its codec, its rows and its bytes once.
	rows, err := db.Query(`SELECT codec, dict, SUM(n), SUM(bytes) FROM (
	    SELECT otlp_codec AS codec, otlp_dict AS dict, COUNT(*) AS n, SUM(LENGTH(otlp)) AS bytes FROM spans WHERE otlp_codec != 3 GROUP BY 1, 2
	    UNION ALL SELECT codec, dict, spans, LENGTH(data) FROM span_frames)
	  GROUP BY 1, 2 ORDER BY 1, 2`)
	require.NoError(t, err)
	defer rows.Close()
	var out []codecCount
	for rows.Next() {
		var c codecCount
		require.NoError(t, rows.Scan(&c.codec, &c.dict, &c.rows, &c.bytes))
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

// fixtureRuns returns n runs of 5 spans (4 LLM calls) named prefix-i.
func fixtureRuns(prefix string, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := 0; i < n; i++ {
		storetest.Add(td, storetest.Run{Seed: fmt.Sprintf("%s-%d", prefix, i), Session: fmt.Sprintf("conv-%d", i%7),
			Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: indexT0 + int64(i)*1e9, LLMCalls: 4})
	}
	return td
}

// TestOTLPCompressedWithTheFilesDictionary: the first trainSpans spans are stored as plain zstd
// frames, then a dictionary trained on them is stored in zstd_dicts and every later row uses it;
// every row reads back byte for byte through the writer, a reader and a second writable handle
// opened before the dictionary existed, and a reader opened after; a reopened writer keeps the dictionary (no second one).
func TestOTLPCompressedWithTheFilesDictionary(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := Open(path, Options{})
	require.NoError(t, err)
	early, err := Open(path, Options{ReadOnly: true}) // before any dictionary
	require.NoError(t, err)
	defer early.Close()
	// A second writable handle (one connection, as `runagain delete` opens the file) opened
	// before the dictionary: it loads the dictionary when a row needs it.
	second, err := Open(path, Options{})
	require.NoError(t, err)
	defer second.Close()

	want := map[string][]byte{}
	for b := 0; b < 3; b++ { // 3 batches of 100 runs (500 spans): the dictionary comes after the second
		td := fixtureRuns(fmt.Sprintf("b%d", b), 100)
		for k, v := range spanProtos(t, td) {
			want[k] = v
		}
		_, err := w.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	counts := codecCounts(t, w.SQL())
	require.Equal(t, []codecCount{{CodecZstd, 0, 1000, counts[0].bytes}, {CodecZstdDict, 1, 500, counts[1].bytes}}, counts,
		"plain zstd until %d spans, then the dictionary", trainSpans)
	var raw int64
	for _, v := range want {
		raw += int64(len(v))
	}
	t.Logf("otlp bytes: raw %d, zstd %d/1000 rows, zstd+dict %d/500 rows", raw, counts[0].bytes, counts[1].bytes)
	assert.Less(t, float64(counts[1].bytes)/500, 0.6*float64(counts[0].bytes)/1000, "a dictionary row is well below a plain zstd row")
	var dicts int
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM zstd_dicts WHERE samples = ?`, trainSpans).Scan(&dicts))
	require.Equal(t, 1, dicts)
	// The dictionary holds the spans' structure, not their values: an erasure never has to touch it.
	var dict []byte
	require.NoError(t, w.SQL().QueryRow(`SELECT dict FROM zstd_dicts`).Scan(&dict))
	for _, kept := range []string{"gen_ai.input.messages", "gen_ai.usage.input_tokens", `"role":"user"`, "gpt-4.1", "storetest"} {
		assert.Contains(t, string(dict), kept)
	}
	for _, value := range []string{"PAYLOAD-SECRET", "conv-", "weather", "file:///payloads"} {
		assert.NotContains(t, string(dict), value, "a value of the sampled spans")
	}

	requireRunsRead(t, w, want)
	requireRunsRead(t, early, want)
	requireRunsRead(t, second, want)
	require.NoError(t, w.Close())

	late, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	requireRunsRead(t, late, want)
	require.NoError(t, late.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	td := fixtureRuns("after-reopen", 10)
	for k, v := range spanProtos(t, td) {
		want[k] = v
	}
	_, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	counts = codecCounts(t, w.SQL())
	require.Len(t, counts, 2)
	assert.Equal(t, int64(550), counts[1].rows, "the reopened writer uses the file's dictionary")
	requireRunsRead(t, w, want)
}

// TestDictionaryTrainedAcrossRestarts: a writer restarted before trainSpans spans takes the file's
// stored spans as its first samples, so the dictionary comes after trainSpans spans in all.
func TestDictionaryTrainedAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	want := map[string][]byte{}
	for b := 0; b < 3; b++ { // 3 writers of 80 runs (400 spans) each
		w, err := Open(path, Options{})
		require.NoError(t, err)
		td := fixtureRuns(fmt.Sprintf("r%d", b), 80)
		for k, v := range spanProtos(t, td) {
			want[k] = v
		}
		_, err = w.WriteTraces(ctx, td)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	r, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	counts := codecCounts(t, r.SQL())
	assert.Equal(t, []codecCount{{CodecZstd, 0, 1200, counts[0].bytes}}, counts,
		"the dictionary is trained at the end of the batch that reaches trainSpans")
	var dicts int
	require.NoError(t, r.SQL().QueryRow(`SELECT COUNT(*) FROM zstd_dicts`).Scan(&dicts))
	assert.Equal(t, 1, dicts, "trained once the third writer's batch brought the samples to trainSpans")
	requireRunsRead(t, r, want)
}

// TestVersion3FileReadAndMigrated: a version 3 file (uncompressed otlp, no codec columns) is read
// as it is by a reader; opened for writing it gains the codec columns and zstd_dicts, keeps its
// rows byte for byte (codec 0, not rewritten), writes new rows compressed, and reads both;
// payload references of the old rows are still listed.
func TestVersion3FileReadAndMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := Open(path, Options{})
	require.NoError(t, err)
	old := fixtureRuns("v3", 20)
	want := spanProtos(t, old)
	_, err = w.WriteTraces(ctx, old)
	require.NoError(t, err)
	err = w.WriteLogs(ctx, storetest.Alert(storetest.Run{Seed: "v3-0", Service: "svc"}, "loop"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	downgradeToV3(t, path)

	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	require.NotContains(t, columns(t, raw, "spans"), "otlp_codec", "a version 3 file")
	oldBytes := map[string][]byte{}
	rows, err := raw.Query(`SELECT trace_id || '/' || span_id, otlp FROM spans`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		var b []byte
		require.NoError(t, rows.Scan(&k, &b))
		oldBytes[k] = b
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.NoError(t, raw.Close())
	for k, v := range want {
		require.True(t, bytes.Equal(v, oldBytes[k]), "the version 3 file holds the protobuf of %s", k)
	}

	r, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	requireRunsRead(t, r, want)
	run, err := r.Run(ctx, storetest.TraceID("v3-0").String())
	require.NoError(t, err)
	assert.Equal(t, 1, run.Logs.LogRecordCount(), "the alert record reads from a version 3 file")
	var refs []string
	require.NoError(t, r.EachPayloadRef(ctx, func(u string) bool { refs = append(refs, u); return true }))
	assert.Equal(t, []string{"file:///payloads/ab/cd"}, refs)
	require.NoError(t, r.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var v int
	require.NoError(t, w.SQL().QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh.db"), Options{})
	require.NoError(t, err)
	assert.Equal(t, columns(t, fresh.SQL(), "spans"), columns(t, w.SQL(), "spans"))
	assert.Equal(t, columns(t, fresh.SQL(), "logs"), columns(t, w.SQL(), "logs"))
	require.NoError(t, fresh.Close())
	rows, err = w.SQL().Query(`SELECT trace_id || '/' || span_id, otlp_codec, otlp FROM spans`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		var codec int
		var b []byte
		require.NoError(t, rows.Scan(&k, &codec, &b))
		assert.Equal(t, CodecRaw, codec)
		assert.True(t, bytes.Equal(oldBytes[k], b), "row %s kept as it was", k)
	}
	require.NoError(t, rows.Err())
	rows.Close()

	added := fixtureRuns("v4", 5)
	_, err = w.WriteTraces(ctx, added)
	require.NoError(t, err)
	for k, b := range spanProtos(t, added) {
		want[k] = b
	}
	counts := codecCounts(t, w.SQL())
	assert.Equal(t, []codecCount{{CodecRaw, 0, 100, counts[0].bytes}, {CodecZstd, 0, 25, counts[1].bytes}}, counts)
	requireRunsRead(t, w, want)
	run, err = w.Run(ctx, storetest.TraceID("v3-0").String())
	require.NoError(t, err)
	assert.Equal(t, 1, run.Logs.LogRecordCount())
}
