package payloadoffloadprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadatatest"
)

type harness struct {
	tb     testing.TB
	tt     *componenttest.Telemetry
	traces processor.Traces
	logs   processor.Logs
	tsink  *consumertest.TracesSink
	lsink  *consumertest.LogsSink
	res    *payloadref.Resolver
}

// testConfig returns the default config on url with a short bounded retry.
func testConfig(url string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Storage.URL = url
	cfg.RetryOnFailure.InitialInterval = 10 * time.Millisecond
	cfg.RetryOnFailure.MaxInterval = 50 * time.Millisecond
	cfg.RetryOnFailure.MaxElapsedTime = 300 * time.Millisecond
	return cfg
}

// newHarness starts a traces and a logs processor on cfg, with sinks, test telemetry and a Resolver.
func newHarness(tb testing.TB, cfg *Config) *harness {
	tb.Helper()
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	h := &harness{tb: tb, tt: componenttest.NewTelemetry(), tsink: new(consumertest.TracesSink), lsink: new(consumertest.LogsSink), res: payloadref.NewResolver()}
	f := NewFactory()
	ctx := context.Background()
	var err error
	if h.traces, err = f.CreateTraces(ctx, metadatatest.NewSettings(h.tt), cfg, h.tsink); err != nil {
		tb.Fatal(err)
	}
	if h.logs, err = f.CreateLogs(ctx, metadatatest.NewSettings(h.tt), cfg, h.lsink); err != nil {
		tb.Fatal(err)
	}
	if err := h.traces.Start(ctx, componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
	if err := h.logs.Start(ctx, componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = h.traces.Shutdown(ctx)
		_ = h.logs.Shutdown(ctx)
		_ = h.res.Close()
		_ = h.tt.Shutdown(ctx)
	})
	return h
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
