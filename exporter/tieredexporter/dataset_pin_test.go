// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestDatasetPinsSurviveRetention: with datasets::url set, the janitors read the real dataset
// store (internal/pins, the layout internal/dataset writes). Of two runs ingested together, the one frozen into a dataset
// survives retention passes that remove the other from the hot and the warm tier (injected
// clock); once its dataset version is removed, the next pass deletes it too.
func TestDatasetPinsSurviveRetention(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := storageOn(dir)
	dsURL := dataset.DefaultURL(dir)
	cfg.Datasets = configoptional.Some(runagainstorageextension.DatasetsConfig{URL: dsURL})
	c := &clock{now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	st, err := runagainstorageextension.New(cfg, componenttest.NewNopTelemetrySettings(), c.Now)
	require.NoError(t, err)
	host := storagetest.Host{component.MustNewID("runagain_storage"): st}
	require.NoError(t, st.Start(ctx, host))
	defer func() { require.NoError(t, st.Shutdown(ctx)) }()
	off := map[string]any{"enabled": false}
	p := startWithHost(t, host, map[string]any{"hot": map[string]any{"sending_queue": off}, "warm": map[string]any{"sending_queue": off}})
	defer p.stop(t)
	old := time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC).UnixNano()
	pinned := storetest.Run{Seed: "in-a-dataset", Service: "svc", Model: "gpt-4.1", Start: old, LLMCalls: 2}
	free := storetest.Run{Seed: "same-age", Service: "svc", Model: "gpt-4.1", Start: old, LLMCalls: 2}
	require.NoError(t, p.traces.ConsumeTraces(ctx, storetest.Traces(pinned, free)))

	// Freeze the pinned run, read back from the hot tier, into a dataset.
	r, err := cfg.OpenReader(ctx)
	require.NoError(t, err)
	run, err := r.Run(ctx, storetest.TraceID("in-a-dataset").String())
	require.NoError(t, err)
	require.NoError(t, r.Close())
	// storetest's runs name payload objects that do not exist (Freeze refuses a payload it cannot
	// hold); this test is about the pins, so the case is frozen without those references.
	rss := run.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			spans := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				spans.At(k).Attributes().RemoveIf(func(k string, _ pcommon.Value) bool { return ref.IsRefKey(k) })
			}
		}
	}
	cs, err := dataset.Freeze("", run.TraceID, run.Traces, run.Logs, nil)
	require.NoError(t, err)
	ds, err := dataset.Open(ctx, dsURL)
	require.NoError(t, err)
	defer ds.Close()
	m, _, err := ds.Put(ctx, "pins", "", []*dataset.Case{cs})
	require.NoError(t, err)

	tiers := func() map[string][]string { // tier -> trace ids it holds
		r, err := cfg.OpenReader(ctx)
		require.NoError(t, err)
		defer r.Close()
		out := map[string][]string{}
		for _, rd := range r.(*store.Tiered).Readers {
			rows, err := rd.Runs(ctx, store.RunFilter{})
			require.NoError(t, err)
			for _, row := range rows {
				if row.Tier != "cold" {
					out[row.Tier] = append(out[row.Tier], row.TraceID)
				}
			}
		}
		return out
	}
	c.Add(runagainstorageextension.DefaultHotRetention + time.Hour)
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{storetest.TraceID("in-a-dataset").String()}, tiers()["hot"], "past the hot retention only the pinned run stays hot")

	c.Add(runagainstorageextension.DefaultWarmRetention)
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	got := tiers()
	assert.Equal(t, []string{storetest.TraceID("in-a-dataset").String()}, got["hot"], "past the warm retention too")
	assert.Equal(t, []string{storetest.TraceID("in-a-dataset").String()}, got["warm"])

	require.NoError(t, ds.Remove(ctx, "pins", m.Version))
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	got = tiers()
	assert.Empty(t, got["hot"], "unpinned: the next pass deletes it")
	assert.Empty(t, got["warm"])
}
