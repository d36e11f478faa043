// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

func recordRuns(n int, at time.Time) []storetest.Run {
	var runs []storetest.Run
	for i := 0; i < n; i++ {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("rec-%d", i), Session: fmt.Sprintf("conv-%d", i%3), Service: "svc",
			Agent: "a", Model: "gpt-4.1", Start: at.Add(time.Duration(i) * time.Minute).UnixNano(), LLMCalls: 1 + i%2, ToolFail: i%4 == 0})
	}
	return runs
}

// TestRecordsEncodingReadsOlderQueueEntries: the warm and cold queues of an earlier build hold
// trimmed OTLP requests (with or without the request context); the records encoding reads them
// back as the records their backend builds of them, and its own entries round-trip.
func TestRecordsEncodingReadsOlderQueueEntries(t *testing.T) {
	dir := t.TempDir()
	_, st := storagetest.Start(t, storageOn(dir))
	td := storetest.Traces(recordRuns(3, time.Now())...)
	ld := storetest.Alert(recordRuns(1, time.Now())[0], "loop")
	for _, tier := range []string{store.TierWarm, store.TierCold} {
		b, err := st.Backend(tier)
		require.NoError(t, err)
		rb := b.(runagainstorageextension.RecordBackend)
		wantT, wantL := rb.TraceRecords(td), rb.LogRecords(ld)
		require.False(t, wantT.Empty())
		require.False(t, wantL.Empty())

		withCtx, err := pdatareq.MarshalTraces(context.Background(), store.TrimTraces(td, nil))
		require.NoError(t, err)
		bare, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(store.TrimTraces(td, nil))
		require.NoError(t, err)
		enc := recordsEncoding{b: rb, sig: signalTraces}
		for _, old := range [][]byte{withCtx, bare} {
			_, req, err := enc.Unmarshal(old)
			require.NoError(t, err, tier)
			assert.Equal(t, wantT.Items(), req.ItemsCount(), tier)
			assertSameRecords(t, wantT, req.(*recordsRequest).r, tier)
		}
		logsOld, err := pdatareq.MarshalLogs(context.Background(), store.TrimLogs(ld, nil))
		require.NoError(t, err)
		_, lreq, err := recordsEncoding{b: rb, sig: signalLogs}.Unmarshal(logsOld)
		require.NoError(t, err, tier)
		assertSameRecords(t, wantL, lreq.(*recordsRequest).r, tier)

		mine, err := enc.Marshal(context.Background(), &recordsRequest{r: wantT})
		require.NoError(t, err)
		_, back, err := enc.Unmarshal(mine)
		require.NoError(t, err)
		assert.Equal(t, wantT, back.(*recordsRequest).r, tier)
		_, _, err = enc.Unmarshal(mine[:len(mine)-3])
		assert.Error(t, err, "a damaged entry is an error, not wrong records")
	}
}

// assertSameRecords compares records built at different instants: the cold partials carry their
// ingestion stamp, which the cold writers replace at write time anyway.
func assertSameRecords(t *testing.T, want, got store.Records, msg string) {
	t.Helper()
	for i := range got.Partials {
		if i < len(want.Partials) {
			got.Partials[i].Ingested = want.Partials[i].Ingested
		}
	}
	assert.Equal(t, want, got, msg)
}

func TestRecordsRequestMergeSplit(t *testing.T) {
	spans, events := store.Summarize(storetest.Traces(recordRuns(4, time.Now())...), nil, nil)
	half := len(spans) / 2
	a := &recordsRequest{r: store.Records{Spans: append([]store.SpanSummary{}, spans[:half]...)}}
	b := &recordsRequest{r: store.Records{Spans: spans[half:], Events: events}}
	total := a.ItemsCount() + b.ItemsCount()
	out, err := a.MergeSplit(context.Background(), 0, exporterhelper.RequestSizerTypeItems, b)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, total, out[0].ItemsCount())
	assert.Equal(t, store.Records{Spans: spans, Events: events}, out[0].(*recordsRequest).r)

	c := &recordsRequest{r: store.Records{Spans: spans, Events: events}}
	parts, err := c.MergeSplit(context.Background(), 5, exporterhelper.RequestSizerTypeItems, nil)
	require.NoError(t, err)
	require.Greater(t, len(parts), 1)
	n := 0
	for _, p := range parts {
		assert.LessOrEqual(t, p.ItemsCount(), 5)
		n += p.ItemsCount()
	}
	assert.Equal(t, total, n, "nothing lost or doubled")
	byBytes, err := c.MergeSplit(context.Background(), c.BytesSize()/2, exporterhelper.RequestSizerTypeBytes, nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(byBytes), 2)

	_, err = a.MergeSplit(context.Background(), 0, exporterhelper.RequestSizerTypeItems, nil)
	require.NoError(t, err)
}

// failingBackend refuses every write while fail is set.
type failingBackend struct {
	runagainstorageextension.RecordBackend
	fail *atomic.Bool
}

var errDown = errors.New("backend down")

func (f failingBackend) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	if f.fail.Load() {
		return errDown
	}
	return f.RecordBackend.WriteTraces(ctx, td)
}

func (f failingBackend) WriteLogs(ctx context.Context, ld plog.Logs) error {
	if f.fail.Load() {
		return errDown
	}
	return f.RecordBackend.WriteLogs(ctx, ld)
}

func (f failingBackend) WriteRecords(ctx context.Context, r store.Records) error {
	if f.fail.Load() {
		return errDown
	}
	return f.RecordBackend.WriteRecords(ctx, r)
}

// TestRecordQueuesSurviveRestartAndUpgrade runs the warm and cold tiers through real
// file_storage persistent queues while their backends are down: first as an earlier build did
// (trimmed OTLP requests in the queues), then with records queues, stopping the exporter each
// time with everything still queued. A third exporter, the backends up again, drains both
// generations of entries: every run is in warm.db with every span, every session in the cold
// tier with every span counted once.
func TestRecordQueuesSurviveRestartAndUpgrade(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	host, st := storagetest.Start(t, storageOn(dir))
	fsf := filestorage.NewFactory()
	fscfg := fsf.CreateDefaultConfig().(*filestorage.Config)
	fscfg.Directory = filepath.Join(dir, "queue")
	fscfg.CreateDirectory = true
	ext, err := fsf.Create(ctx, extensiontest.NewNopSettings(fsf.Type()), fscfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, host))
	defer func() { require.NoError(t, ext.Shutdown(ctx)) }()
	host[component.MustNewIDWithName("file_storage", "queue")] = ext

	cfg := createDefaultConfig().(*Config)
	queue := map[string]any{"storage": "file_storage/queue", "queue_size": 10000,
		"batch": map[string]any{"flush_timeout": "50ms", "sizer": "items", "min_size": 100}}
	retry := map[string]any{"initial_interval": "20ms", "max_interval": "50ms", "max_elapsed_time": "0s"}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"warm": map[string]any{"sending_queue": queue, "retry_on_failure": retry},
		"cold": map[string]any{"sending_queue": queue, "retry_on_failure": retry},
	}).Unmarshal(cfg))
	down := &atomic.Bool{}
	set := exportertest.NewNopSettings(metadata.Type) // one id for the three: the queues' keys
	set.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	start := func(trimmed bool) *tieredExporter {
		e := &tieredExporter{set: set, cfg: cfg, sig: signalTraces, keys: st.SessionKeys(), noRecords: trimmed}
		for _, name := range []string{store.TierWarm, store.TierCold} {
			b, err := st.Backend(name)
			require.NoError(t, err)
			s := map[string]TierSending{store.TierWarm: cfg.warmSending(), store.TierCold: cfg.coldSending()}[name]
			require.NoError(t, e.addTier(ctx, name, failingBackend{RecordBackend: b.(runagainstorageextension.RecordBackend), fail: down}, s))
			assert.Equal(t, !trimmed, e.tiers[len(e.tiers)-1].records, name)
		}
		for _, c := range e.components() {
			require.NoError(t, c.Start(ctx, host))
		}
		return e
	}
	stop := func(e *tieredExporter) {
		for _, c := range e.components() {
			require.NoError(t, c.Shutdown(ctx))
		}
	}

	runs := recordRuns(9, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	down.Store(true)
	older := start(true)
	for _, r := range runs[:4] {
		require.NoError(t, older.ConsumeTraces(ctx, storetest.Traces(r)))
	}
	time.Sleep(200 * time.Millisecond) // let the batches form and fail at least once
	stop(older)
	newer := start(false)
	for _, r := range runs[4:] {
		require.NoError(t, newer.ConsumeTraces(ctx, storetest.Traces(r)))
	}
	time.Sleep(200 * time.Millisecond)
	stop(newer)

	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer warm.Close()
	rows, err := warm.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, rows, "the backends were down: everything is still queued")

	down.Store(false)
	last := start(false)
	defer stop(last)
	wantSpans := 0
	for _, r := range runs {
		wantSpans += r.Spans()
	}
	cold, err := coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer cold.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, err = warm.Runs(ctx, store.RunFilter{})
		require.NoError(t, err)
		sessions, err := cold.Sessions(ctx)
		require.NoError(t, err)
		var warmSpans, coldSpans int64
		for _, r := range rows {
			warmSpans += r.Spans
		}
		for _, s := range sessions {
			coldSpans += s.Spans
		}
		if warmSpans >= int64(wantSpans) && coldSpans >= int64(wantSpans) {
			assert.EqualValues(t, wantSpans, warmSpans)
			assert.EqualValues(t, wantSpans, coldSpans, "every span counted once")
			assert.Len(t, rows, len(runs))
			assert.Len(t, sessions, 3)
			break
		}
		require.True(t, time.Now().Before(deadline), "queues not drained in 30 s: warm %d cold %d of %d spans", warmSpans, coldSpans, wantSpans)
		time.Sleep(50 * time.Millisecond)
	}
}
