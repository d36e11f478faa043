// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

var (
	eraseA = storetest.Run{Seed: "ea", Session: "conv-erase", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: 1_000_000_000, LLMCalls: 2, ToolFail: true}
	eraseB = storetest.Run{Seed: "eb", Session: "conv-erase", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: 2_000_000_000, LLMCalls: 1}
	eraseC = storetest.Run{Seed: "ec", Session: "conv-keep", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: 3_000_000_000, LLMCalls: 1}
)

// planted marks every span of run r with a value found nowhere else and a payload reference of
// its own, and returns them.
func plant(td ptrace.Traces, r storetest.Run) (value, ref string) {
	value, ref = "PLANTED-"+r.Seed+"-7f3a9c", "file:///blobs/sha256/"+r.Seed+".zst"
	store.EachSpan(td, func(s ptrace.Span) {
		if s.TraceID() == storetest.TraceID(r.Seed) {
			s.Attributes().PutStr("app.note", value)
			s.Events().AppendEmpty().Attributes().PutStr("gen_ai.choice_ref", ref)
		}
	})
	return value, ref
}

func refsOf(t *testing.T, d *DB) []string {
	var out []string
	require.NoError(t, d.EachPayloadRef(context.Background(), func(u string) bool { out = append(out, u); return true }))
	return out
}

// TestEraseSessionHotAndWarm: the runs of a session are found in each tier, erased with their
// payload references and alerts, and no byte of them stays in the SQLite files (secure_delete,
// WAL truncated), while another session is untouched and its references stay live.
func TestEraseSessionHotAndWarm(t *testing.T) {
	ctx := context.Background()
	dir, hot, warm := openHotWarm(t)
	var err error

	td := storetest.Traces(eraseA, eraseB, eraseC)
	valA, refA := plant(td, eraseA)
	valB, refB := plant(td, eraseB)
	_, refC := plant(td, eraseC)
	_, err = hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(eraseA, "loop in "+valA)))
	require.NoError(t, warm.WriteTraces(ctx, td))
	require.NoError(t, warm.WriteLogs(ctx, storetest.Alert(eraseA, "loop in "+valA)))

	assert.Equal(t, []string{"file:///blobs/sha256/ea.zst", "file:///blobs/sha256/eb.zst", "file:///blobs/sha256/ec.zst", "file:///payloads/ab/cd"}, refsOf(t, hot))

	want := []string{storetest.TraceID("ea").String(), storetest.TraceID("eb").String()}
	for _, e := range []store.Eraser{hot, warm} {
		ids, err := e.SessionTraces(ctx, "conv-erase")
		require.NoError(t, err)
		assert.ElementsMatch(t, want, ids)
	}
	ids, err := hot.SessionTraces(ctx, storetest.TraceID("ec").String())
	require.NoError(t, err)
	assert.Equal(t, []string{storetest.TraceID("ec").String()}, ids, "a trace id names its own run")

	// The spans of a run written together are compressed as one frame (frames.go), so their
	// values are not in the file as they are: a slice of each run's frames stands for them.
	frameA, frameB, frameC := frameBytes(t, hot, eraseA), frameBytes(t, hot, eraseB), frameBytes(t, hot, eraseC)

	e := store.Erasure{Session: "conv-erase", TraceIDs: want}
	r, err := hot.Erase(ctx, e)
	require.NoError(t, err)
	assert.EqualValues(t, eraseA.Spans()+eraseB.Spans(), r.Counts["spans"])
	assert.EqualValues(t, 1, r.Counts["logs"])
	assert.Positive(t, r.Counts["payload_refs"])
	assert.EqualValues(t, 2, r.Counts["run_index"], "the run index rows of both runs")
	assert.Empty(t, r.Notes)
	assert.ElementsMatch(t, []string{refA, refB, "file:///payloads/ab/cd"}, r.PayloadRefs)
	rw, err := warm.Erase(ctx, e)
	require.NoError(t, err)
	assert.EqualValues(t, eraseA.Spans()+eraseB.Spans(), rw.Counts["span_summaries"])
	assert.EqualValues(t, 2, rw.Counts["key_events"], "the exception and the alert")

	assert.Equal(t, []string{refC, "file:///payloads/ab/cd"}, refsOf(t, hot), "the kept session's references stay live")
	for _, id := range want {
		_, err := hot.Run(ctx, id)
		assert.ErrorIs(t, err, store.ErrNotFound)
		_, err = warm.Run(ctx, id)
		assert.ErrorIs(t, err, store.ErrNotFound)
	}
	run, err := hot.Run(ctx, storetest.TraceID("ec").String())
	require.NoError(t, err)
	assert.Equal(t, eraseC.Spans(), run.Traces.SpanCount())
	for _, c := range []interface {
		Compact(context.Context) ([]string, error)
	}{hot, warm} {
		notes, err := c.Compact(ctx)
		require.NoError(t, err)
		assert.Empty(t, notes)
	}
	again, err := hot.Erase(ctx, e)
	require.NoError(t, err)
	assert.Zero(t, again.Total(), "erasing twice removes nothing more")

	// no byte of the erased session in any file of the directory; the kept one is there
	found := func(v string) bool {
		hit := false
		require.NoError(t, filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(v)) {
				i := bytes.Index(b, []byte(v))
				t.Logf("%q in %s at %d (page %d): %q", v, p, i, i/4096+1, b[max(0, i-200):i+40])
				hit = true
			}
			return nil
		}))
		return hit
	}
	for _, v := range []string{valA, valB, "conv-erase", refA} {
		assert.False(t, found(v), "%q still in the data directory", v)
	}
	for _, f := range [][]byte{frameA, frameB} {
		assert.False(t, found(string(f)), "a frame of an erased run is still in the data directory")
	}
	assert.True(t, found(string(frameC)), "the other session's rows are kept")
	var frames int
	require.NoError(t, hot.SQL().QueryRow(`SELECT COUNT(*) FROM span_frames`).Scan(&frames))
	assert.Equal(t, 1, frames, "the erased runs' frames are deleted with their rows")
}

// frameBytes returns 32 bytes from the middle of the span frame holding the spans of run r.
func frameBytes(t *testing.T, d *DB, r storetest.Run) []byte {
	t.Helper()
	var data []byte
	require.NoError(t, d.SQL().QueryRow(`SELECT data FROM span_frames WHERE id = (SELECT otlp_dict FROM spans
	  WHERE trace_id = ? AND otlp_codec = 3 LIMIT 1)`, storetest.TraceID(r.Seed).String()).Scan(&data))
	require.Greater(t, len(data), 64)
	return data[len(data)/2-16 : len(data)/2+16]
}

// TestPayloadRefsBackfilled: a hot file written before payload_refs existed gains the table,
// filled from the stored spans, when opened for writing; read-only, the stored rows are scanned.
func TestPayloadRefsBackfilled(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	d, err := Open(path, Options{})
	require.NoError(t, err)
	td := storetest.Traces(eraseC)
	_, refC := plant(td, eraseC)
	_, err = d.WriteTraces(ctx, td)
	require.NoError(t, err)
	_, err = d.SQL().Exec(`DROP TABLE payload_refs`)
	require.NoError(t, err)
	require.NoError(t, d.Close())

	ro, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	assert.Equal(t, []string{refC, "file:///payloads/ab/cd"}, refsOf(t, ro), "scanned")
	require.NoError(t, ro.Close())

	d, err = Open(path, Options{})
	require.NoError(t, err)
	defer d.Close()
	var n int
	require.NoError(t, d.SQL().QueryRow(`SELECT COUNT(*) FROM payload_refs`).Scan(&n))
	assert.Equal(t, 3, n, "each span's event ref, and the LLM span's output ref")
	assert.Equal(t, []string{refC, "file:///payloads/ab/cd"}, refsOf(t, d))
}
