// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// logsCapture is a test exporter ("capture") that keeps the log records it receives.
func logsCapture(sink *consumertest.LogsSink) exporter.Factory {
	typ := component.MustNewType("capture")
	return exporter.NewFactory(typ, func() component.Config { return &struct{}{} },
		exporter.WithLogs(func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
			return exporterhelper.NewLogs(ctx, set, cfg, sink.ConsumeLogs)
		}, component.StabilityLevelDevelopment))
}

// TestInCollector runs a real collector (otelcol service, OTLP/HTTP receiver, agent_guard in a
// traces pipeline feeding a metrics pipeline with the prometheus exporter and a logs pipeline),
// posts testdata/runaway_session.json to the receiver as `runagain import` does, and checks
// that the alert reaches both the Prometheus endpoint and the logs pipeline exactly once (the
// two connector instances share one analysis).
func TestInCollector(t *testing.T) {
	otlpAddr, promAddr := freeAddr(t), freeAddr(t)
	sink := &consumertest.LogsSink{}
	cfgYAML := fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
connectors:
  agent_guard: {}
exporters:
  prometheus:
    endpoint: %s
    enable_open_metrics: true
  capture: {}
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [agent_guard]
    metrics/agent_guard:
      receivers: [agent_guard]
      exporters: [prometheus]
    logs/agent_guard:
      receivers: [agent_guard]
      exporters: [capture]
`, otlpAddr, promAddr)

	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.NewDefaultBuildInfo(),
		Factories: func() (otelcol.Factories, error) {
			var f otelcol.Factories
			var err error
			if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
				return f, err
			}
			if f.Connectors, err = otelcol.MakeFactoryMap[connector.Factory](NewFactory()); err != nil {
				return f, err
			}
			if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](prometheusexporter.NewFactory(), logsCapture(sink)); err != nil {
				return f, err
			}
			f.Telemetry = otelconftelemetry.NewFactory()
			return f, nil
		},
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{"yaml:" + cfgYAML},
			ProviderFactories: []confmap.ProviderFactory{yamlprovider.NewFactory()},
		}},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- col.Run(ctx) }()
	defer func() {
		col.Shutdown()
		require.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { return col.GetState() == otelcol.StateRunning }, 20*time.Second, 10*time.Millisecond)

	body, err := os.ReadFile("testdata/runaway_session.json")
	require.NoError(t, err)
	resp, err := http.Post("http://"+otlpAddr+"/v1/traces", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Eventually(t, func() bool { return sink.LogRecordCount() >= 1 }, 10*time.Second, 10*time.Millisecond)
	var text string
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + promAddr + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		_ = r.Body.Close()
		text = string(b)
		return lineWith(text, "runagain_alerts_total{", `alert_kind="loop"`) != ""
	}, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, lineWith(text, "runagain_alerts_total{", `alert_kind="loop"`), "} 1")
	assert.Equal(t, 1, sink.LogRecordCount(), "one alert record: the batch was analysed once")
	lr := alertsOf(sink.AllLogs()[0])[0]
	assert.Equal(t, runaway.TraceID(1), lr.TraceID())
	assert.Equal(t, "runaway-session-1", attrStr(lr.Attributes(), "session.id"))
}
