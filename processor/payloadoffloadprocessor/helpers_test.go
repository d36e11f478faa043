// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadatatest"
)

type harness struct {
	tb     testing.TB
	ext    *runagainstorageextension.Extension
	tt     *componenttest.Telemetry
	traces processor.Traces
	logs   processor.Logs
	tsink  *consumertest.TracesSink
	lsink  *consumertest.LogsSink
	res    *payloadref.Resolver
}

// testCfg is a processor configuration with the payloads section of the runagain_storage
// extension the harness starts beside it.
type testCfg struct {
	*Config
	payloads runagainstorageextension.PayloadsConfig
}

// testConfig returns the default config, payloads on url (single objects, until payloads.Dir is
// set), with a short bounded retry.
func testConfig(url string) *testCfg {
	cfg := createDefaultConfig().(*Config)
	cfg.RetryOnFailure.InitialInterval = 10 * time.Millisecond
	cfg.RetryOnFailure.MaxInterval = 50 * time.Millisecond
	cfg.RetryOnFailure.MaxElapsedTime = 300 * time.Millisecond
	return &testCfg{Config: cfg, payloads: runagainstorageextension.PayloadsConfig{URL: url, Pack: runagainstorageextension.DefaultPack}}
}

// startPayloads starts a runagain_storage extension holding the payloads of cfg, shut down at
// the end of the test, and returns a host holding it.
func startPayloads(tb testing.TB, cfg *testCfg) (storagetest.Host, *runagainstorageextension.Extension) {
	tb.Helper()
	sc := runagainstorageextension.NewDefaultConfig()
	sc.Payloads = configoptional.Some(cfg.payloads)
	return storagetest.Start(tb, sc)
}

// lifecycleHost is the generated lifecycle tests' host (metadata.yaml tests::host).
func lifecycleHost(t *testing.T) component.Host {
	host, _ := startPayloads(t, testConfig("mem://lifecycle"))
	return host
}

// newHarness starts a traces and a logs processor on cfg (and the extension holding its
// payloads), with sinks, test telemetry and a Resolver.
func newHarness(tb testing.TB, cfg *testCfg) *harness {
	tb.Helper()
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	host, ext := startPayloads(tb, cfg)
	var staging []payloadref.Option
	if cfg.payloads.Dir != "" {
		staging = append(staging, payloadref.WithStagingDir(filepath.Join(cfg.payloads.Dir, packfile.StagingDir)))
	}
	h := &harness{tb: tb, ext: ext, tt: componenttest.NewTelemetry(), tsink: new(consumertest.TracesSink), lsink: new(consumertest.LogsSink),
		res: payloadref.NewResolver(staging...)}
	f := NewFactory()
	ctx := context.Background()
	var err error
	if h.traces, err = f.CreateTraces(ctx, metadatatest.NewSettings(h.tt), cfg.Config, h.tsink); err != nil {
		tb.Fatal(err)
	}
	if h.logs, err = f.CreateLogs(ctx, metadatatest.NewSettings(h.tt), cfg.Config, h.lsink); err != nil {
		tb.Fatal(err)
	}
	if err := h.traces.Start(ctx, host); err != nil {
		tb.Fatal(err)
	}
	if err := h.logs.Start(ctx, host); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		h.stop()
		_ = h.res.Close()
		_ = h.tt.Shutdown(ctx)
	})
	return h
}

// stop shuts the processors down, then the extension (which seals and uploads the open pack),
// as the collector does; a second call does nothing.
func (h *harness) stop() {
	h.tb.Helper()
	ctx := context.Background()
	if err := h.traces.Shutdown(ctx); err != nil {
		h.tb.Fatal(err)
	}
	if err := h.logs.Shutdown(ctx); err != nil {
		h.tb.Fatal(err)
	}
	if err := h.ext.Shutdown(ctx); err != nil {
		h.tb.Fatal(err)
	}
}

// metric returns the sum of an int64 counter's data points (0 when never recorded).
func (h *harness) metric(name string) int64 {
	h.tb.Helper()
	m, err := h.tt.GetMetric("otelcol_processor_payload_offload_" + name)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return 0
		}
		h.tb.Fatal(err)
	}
	var sum int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			sum += dp.Value
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			sum += int64(dp.Count)
		}
	default:
		h.tb.Fatalf("metric %s has unexpected type %T", name, m.Data)
	}
	return sum
}
