// SPDX-License-Identifier: Apache-2.0

package coldstore

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

var (
	day1 = time.Date(2026, 10, 30, 23, 59, 0, 0, time.UTC).UnixNano()
	runA = storetest.Run{Seed: "a", Session: "conv-1", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: day1, LLMCalls: 2, ToolFail: true}
	runB = storetest.Run{Seed: "b", Session: "conv-1", Service: "svc", Agent: "weather", Model: "claude-sonnet-4", Start: day1 + int64(2*time.Hour), LLMCalls: 1}
	runC = storetest.Run{Seed: "c", Service: "other", Agent: "x", Model: "gpt-4.1", Start: day1 + int64(time.Hour), LLMCalls: 1}
)

func TestWritePartitionedReadMergedAndExpire(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	st, err := Open(ctx, dir, Options{Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer st.Close()
	b1 := store.Partials(storetest.Traces(runA, runC), storetest.Alert(runA, "loop"), nil, 0, nil)
	keys1, err := st.Write(ctx, b1)
	require.NoError(t, err)
	// runA starts on 2026-10-30, runC on 2026-10-31: one object per date partition.
	require.Len(t, keys1, 2)
	assert.True(t, strings.HasPrefix(keys1[0], "date=2026-10-30/"), keys1[0])
	assert.True(t, strings.HasPrefix(keys1[1], "date=2026-10-31/"), keys1[1])
	_, err = st.Write(ctx, b1) // a retry rewrites the same objects
	require.NoError(t, err)
	now = now.Add(time.Hour)
	keys2, err := st.Write(ctx, store.Partials(storetest.Traces(runB), plog.Logs{}, nil, 0, nil))
	require.NoError(t, err)
	all, err := st.Keys(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 3)

	r, err := Open(ctx, dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	ss, err := r.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, ss, 2)
	conv := ss[0]
	assert.Equal(t, "conv-1", conv.SessionID)
	assert.EqualValues(t, runA.Spans()+runB.Spans(), conv.Spans)
	assert.EqualValues(t, 300, conv.InputTokens)
	assert.EqualValues(t, 1, conv.Alerts)
	assert.EqualValues(t, 1, conv.Errors)
	assert.Equal(t, []string{"claude-sonnet-4", "gpt-4.1"}, conv.Models)

	run, err := r.Run(ctx, storetest.TraceID("b").String())
	require.NoError(t, err)
	assert.Equal(t, "cold", run.Tier)
	require.NotNil(t, run.Session)
	assert.Equal(t, "conv-1", run.Session.SessionID)
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 2)

	// Expire what was written before the second write: batch 1's objects go.
	n, err := st.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	left, err := st.Keys(ctx)
	require.NoError(t, err)
	assert.Equal(t, keys2, left)
}

// TestParquetReadByArrow reads the cold files with apache/arrow-go's pqarrow, an independent
// Parquet implementation, and checks the schema and every value against the writer's input.
func TestParquetReadByArrow(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, dir, Options{Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	require.NoError(t, err)
	defer st.Close()
	want := store.Partials(storetest.Traces(runA, runB), storetest.Alert(runA, "loop"), nil, 0, nil)
	keys, err := st.Write(ctx, want)
	require.NoError(t, err)
	require.Len(t, keys, 1)

	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(keys[0])))
	require.NoError(t, err)
	pf, err := file.NewParquetReader(bytesReaderAt(data))
	require.NoError(t, err)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(ctx)
	require.NoError(t, err)
	defer tbl.Release()

	names := map[string]arrow.DataType{}
	for _, f := range tbl.Schema().Fields() {
		names[f.Name] = f.Type
	}
	for col, typ := range map[string]arrow.Type{"session_id": arrow.STRING, "batch_id": arrow.STRING,
		"first_seen_unix_nano": arrow.INT64, "last_seen_unix_nano": arrow.INT64, "models": arrow.LIST,
		"trace_ids": arrow.LIST, "spans": arrow.INT64, "input_tokens": arrow.INT64, "output_tokens": arrow.INT64,
		"cost_usd": arrow.FLOAT64, "errors": arrow.INT64, "alerts": arrow.INT64, "ingested_unix_nano": arrow.INT64} {
		require.Contains(t, names, col)
		assert.Equal(t, typ, names[col].ID(), col)
	}
	require.EqualValues(t, len(want), tbl.NumRows())

	col := func(name string) arrow.Array {
		idx := tbl.Schema().FieldIndices(name)
		require.Len(t, idx, 1, name)
		ch := tbl.Column(idx[0]).Data().Chunks()
		require.Len(t, ch, 1)
		return ch[0]
	}
	sessions := col("session_id").(*array.String)
	spans := col("spans").(*array.Int64)
	in := col("input_tokens").(*array.Int64)
	alerts := col("alerts").(*array.Int64)
	ingested := col("ingested_unix_nano").(*array.Int64)
	models := col("models").(*array.List)
	for i, p := range want {
		assert.Equal(t, p.SessionID, sessions.Value(i))
		assert.Equal(t, p.Spans, spans.Value(i))
		assert.Equal(t, p.InputTokens, in.Value(i))
		assert.Equal(t, p.Alerts, alerts.Value(i))
		assert.EqualValues(t, int64(1_800_000_000)*1e9, ingested.Value(i))
		start, end := models.ValueOffsets(i)
		vals := models.ListValues().(*array.String)
		var got []string
		for j := start; j < end; j++ {
			got = append(got, vals.Value(int(j)))
		}
		sort.Strings(got)
		assert.Equal(t, p.Models, got)
	}
}

// TestWriteOfSeveralBatchesOneObjectPerSessionDay: a write of two requests' rows of one session
// that crosses midnight is one object, in the partition of the session's earliest first seen (as
// the one row combined from them was), each row keeping its own batch id.
func TestWriteOfSeveralBatchesOneObjectPerSessionDay(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir(), Options{})
	require.NoError(t, err)
	defer st.Close()
	late := runB
	late.Start = day1 + int64(10*time.Minute) // the next day
	ps := append(store.Partials(storetest.Traces(runA), plog.Logs{}, nil, 0, nil), store.Partials(storetest.Traces(late), plog.Logs{}, nil, 0, nil)...)
	require.Len(t, ps, 2)
	require.NotEqual(t, ps[0].BatchID, ps[1].BatchID)
	keys, err := st.Write(ctx, ps)
	require.NoError(t, err)
	batch, several := store.BatchOf(ps)
	require.True(t, several)
	assert.Equal(t, []string{Key(time.Unix(0, day1), batch)}, keys)
	got, err := st.Partials(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.ElementsMatch(t, []string{ps[0].BatchID, ps[1].BatchID}, []string{got[0].BatchID, got[1].BatchID})
}

// TestWriteKeepsRecordsIngestion: a partial built before the cold queue keeps the ingestion time
// it was built with when the queue delivers it later (the object's retention clock too), as the
// ClickHouse cold writer does; a partial without one is stamped with the store's clock.
func TestWriteKeepsRecordsIngestion(t *testing.T) {
	ctx := context.Background()
	built := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	later := built.Add(time.Hour)
	dir := t.TempDir()
	st, err := Open(ctx, dir, Options{Now: func() time.Time { return later }})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Write(ctx, store.Partials(storetest.Traces(runA), plog.Logs{}, nil, built.UnixNano(), nil))
	require.NoError(t, err)
	_, err = st.Write(ctx, store.Partials(storetest.Traces(runC), plog.Logs{}, nil, 0, nil))
	require.NoError(t, err)
	ps, err := st.Partials(ctx)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, p := range ps {
		got[p.TraceIDs[0]] = p.Ingested
	}
	assert.Equal(t, map[string]int64{
		storetest.TraceID("a").String(): built.UnixNano(),
		storetest.TraceID("c").String(): later.UnixNano(),
	}, got)
	// Retention counts from the build: half an hour after it, runA's object expires, runC's stays.
	n, err := st.Expire(ctx, built.Add(30*time.Minute))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	left, err := st.Partials(ctx)
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, storetest.TraceID("c").String(), left[0].TraceIDs[0])
}
