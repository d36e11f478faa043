// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadatatest"
)

// TestStorageCircuitBreaker drives the storage circuit breaker through every state against a
// real file bucket that fails (its directory replaced by a file) and comes back:
// closed -> open (a failed batch) -> half-open (after storage.cooldown) -> open (the probe
// fails) -> half-open -> closed (the probe succeeds). While open, and while another batch
// probes, values are not tried and stay inline, marked. Each transition is logged and counted.
func TestStorageCircuitBreaker(t *testing.T) {
	ctx := context.Background()
	url, breakIt := brokenStorage(t)
	cfg := testConfig(url)
	cfg.Storage.Cooldown = time.Second
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(ctx)) }()
	core, logs := observer.New(zapcore.InfoLevel)
	ts := metadatatest.NewSettings(tt).TelemetrySettings
	ts.Logger = zap.New(core)
	o, err := newOffloader(cfg.Config, ts)
	require.NoError(t, err)
	host, _ := startPayloads(t, cfg)
	require.NoError(t, o.start(ctx, host))
	defer func() { require.NoError(t, o.shutdown(ctx)) }()

	metric := func(name string) map[string]int64 {
		out := map[string]int64{}
		m, err := tt.GetMetric("otelcol_processor_payload_offload_" + name)
		if err != nil {
			return out
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				v, _ := dp.Attributes.Value(attribute.Key("state"))
				out[v.AsString()] += dp.Value
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				out[""] += int64(dp.Count)
			}
		}
		return out
	}
	attempts := func() int64 { return metric("upload_duration")[""] }
	n := 0
	// send offloads one value and reports whether it was stored (else it stayed inline, marked).
	send := func() bool {
		n++
		td, s := oneSpan()
		s.Attributes().PutStr("gen_ai.tool.call.result", fmt.Sprintf("%d %s", n, strings.Repeat("r", 5000)))
		out, err := o.processTraces(ctx, td)
		require.NoError(t, err, "keep_inline never fails the batch")
		attrs := out.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
		_, stored := attrs.Get("gen_ai.tool.call.result_ref")
		_, marked := attrs.Get(FailedKeysAttr)
		require.NotEqual(t, stored, marked, "a value is either stored or marked")
		return stored
	}
	waitHalfOpen := func() {
		require.Eventually(t, func() bool { return o.breaker.State() == gobreaker.StateHalfOpen }, 30*time.Second, 10*time.Millisecond)
	}
	logged := func(msg string) int { return logs.FilterMessageSnippet(msg).Len() }

	// Closed, storage working.
	require.True(t, send())
	require.Equal(t, int64(1), attempts())
	assert.Equal(t, gobreaker.StateClosed, o.breaker.State())

	// Storage breaks: the batch fails its whole retry and opens the circuit.
	breakIt()
	require.False(t, send())
	require.Equal(t, int64(2), attempts())
	require.Equal(t, gobreaker.StateOpen, o.breaker.State())
	assert.Equal(t, map[string]int64{"open": 1}, metric("storage_circuit_transitions"))
	assert.Equal(t, 1, logs.FilterMessageSnippet("circuit open").FilterLevelExact(zapcore.WarnLevel).Len())

	// Open: the next batch does not touch storage.
	require.False(t, send())
	assert.Equal(t, int64(2), attempts(), "no attempt while the circuit is open")
	assert.Equal(t, 1, logs.FilterMessageSnippet("values kept inline").FilterField(zap.Error(errCircuitOpen)).Len())

	// After the cooldown: half-open. While one batch probes, others are not tried either.
	waitHalfOpen()
	probe, err := o.breaker.Allow()
	require.NoError(t, err)
	require.False(t, send())
	assert.Equal(t, int64(2), attempts(), "no attempt while another batch probes")
	assert.Equal(t, 1, logs.FilterMessageSnippet("values kept inline").FilterField(zap.Error(errProbing)).Len())
	probe(errCallerGone) // a probe whose caller gave up decides nothing
	require.Equal(t, gobreaker.StateHalfOpen, o.breaker.State())

	// The probe batch fails (storage still broken): open again.
	require.False(t, send())
	require.Equal(t, int64(3), attempts(), "the half-open circuit lets one batch try")
	require.Equal(t, gobreaker.StateOpen, o.breaker.State())
	require.False(t, send())
	require.Equal(t, int64(3), attempts())

	// Storage comes back: the next probe succeeds and closes the circuit.
	dir := strings.TrimPrefix(strings.SplitN(url, "?", 2)[0], "file://")
	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	waitHalfOpen()
	require.True(t, send())
	require.Equal(t, gobreaker.StateClosed, o.breaker.State())
	require.True(t, send())
	assert.Equal(t, int64(5), attempts())

	assert.Equal(t, map[string]int64{"open": 2, "half-open": 2, "closed": 1}, metric("storage_circuit_transitions"))
	assert.Equal(t, 2, logged("storage circuit open"))
	assert.Equal(t, 2, logged("storage circuit half-open"))
	assert.Equal(t, 1, logged("storage circuit closed"))
	assert.Equal(t, int64(5), metric("failures")[""], "every value not stored counted as a failure")
}

// TestStorageCircuitBreakerOff: with storage.cooldown 0 there is no breaker; every batch tries
// storage.
func TestStorageCircuitBreakerOff(t *testing.T) {
	url, breakIt := brokenStorage(t)
	cfg := testConfig(url)
	cfg.Storage.Cooldown = 0
	h := newHarness(t, cfg)
	breakIt()
	for i := range 3 {
		td, s := oneSpan()
		s.Attributes().PutStr("gen_ai.tool.call.result", fmt.Sprintf("%d %s", i, strings.Repeat("r", 5000)))
		require.NoError(t, h.traces.ConsumeTraces(context.Background(), td))
	}
	assert.Equal(t, int64(3), h.metric("upload_duration"), "each batch tried storage")
	assert.Zero(t, h.metric("storage_circuit_transitions"))
}
