// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestPrometheusExporterShowsAlert wires agent_guard to the real contrib prometheus exporter on
// 127.0.0.1 (as config/default.yaml does), imports the runaway session in two batches and
// scrapes the endpoint: the loop alert, cost and token usage are there, cumulative across
// batches, with the alert's exemplar pointing at the trace.
func TestPrometheusExporterShowsAlert(t *testing.T) {
	ctx := context.Background()
	pf := prometheusexporter.NewFactory()
	var exp exporter.Metrics
	// The exporter binds its endpoint in Start: a port another test process took between
	// FreePort and the bind is retried on a fresh one.
	ports := collectortest.StartOnFreePorts(t, 1, func(ports []int) error {
		pcfg := pf.CreateDefaultConfig()
		require.NoError(t, confmap.NewFromStringMap(map[string]any{
			"endpoint":                         fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"enable_open_metrics":              true,
			"resource_to_telemetry_conversion": map[string]any{"enabled": true},
		}).Unmarshal(pcfg))
		var err error
		exp, err = pf.CreateMetrics(ctx, exportertest.NewNopSettings(pf.Type()), pcfg)
		require.NoError(t, err)
		return exp.Start(ctx, componenttest.NewNopHost())
	})
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	defer func() { require.NoError(t, exp.Shutdown(ctx)) }()

	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, "prometheus")
	c, err := NewFactory().CreateTracesToMetrics(clockwork.AddToContext(ctx, clockwork.NewFakeClockAt(t0.Add(time.Hour))), set, createDefaultConfig(), exp)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(ctx)) }()

	td := runaway.Generate(runaway.Default())
	for _, b := range batches(splitSpans(td, 2)) {
		require.NoError(t, c.ConsumeTraces(ctx, b))
	}
	c.(*handle).g.flush(ctx) // as the metrics flush ticker does

	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	text := string(body)
	if testing.Verbose() {
		t.Log(text)
	}

	alert := lineWith(text, "runagain_alerts_total{", `alert_kind="loop"`)
	require.NotEmpty(t, alert, "no loop alert series in:\n%s", text)
	assert.Contains(t, alert, `gen_ai_agent_name="weather_assistant"`)
	assert.Contains(t, alert, `job="weather-agent"`)
	assert.Contains(t, alert, " 1.0 # {", "value 1 with an exemplar")
	assert.Contains(t, alert, "trace_id=\""+runaway.TraceID(1).String()+"\"")
	assert.NotEmpty(t, lineWith(text, "runagain_cost", `gen_ai_request_model="gpt-4o-mini"`), "cost series")
	// 20 chat calls in two batches: the histogram count is cumulative.
	assert.Contains(t, lineWith(text, "gen_ai_client_inference_duration", "_count{", `gen_ai_request_model="gpt-4o-mini"`), "} 20")
	assert.NotEmpty(t, lineWith(text, "gen_ai_client_inference_usage_input_tokens", `gen_ai_request_model="gpt-4o-mini"`), "input token counter")
	assert.Empty(t, lineWith(text, "gen_ai_client_token_usage"), "semconv-1.41 names only with also_emit_previous")
}

// splitSpans returns td's first ResourceSpans cut into n ResourceSpans of consecutive spans.
func splitSpans(td ptrace.Traces, n int) ptrace.Traces {
	in := td.ResourceSpans().At(0)
	spans := in.ScopeSpans().At(0).Spans()
	out := ptrace.NewTraces()
	per := (spans.Len() + n - 1) / n
	for start := 0; start < spans.Len(); start += per {
		rs := out.ResourceSpans().AppendEmpty()
		in.Resource().CopyTo(rs.Resource())
		ss := rs.ScopeSpans().AppendEmpty()
		for i := start; i < start+per && i < spans.Len(); i++ {
			spans.At(i).CopyTo(ss.Spans().AppendEmpty())
		}
	}
	return out
}

func lineWith(text string, parts ...string) string {
	for _, line := range strings.Split(text, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}
