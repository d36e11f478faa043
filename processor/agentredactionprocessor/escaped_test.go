// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadatatest"
)

// TestEscapedToolResult: a tool result stored as a JSON string literal whose e-mail is written
// with a JSON escape (maria.lopez\u0040example.org) is redacted, and stays a JSON string; a
// quoted value that is not a valid literal passes through unchanged and is counted as malformed.
func TestEscapedToolResult(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	sink := new(consumertest.TracesSink)
	p, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(tt), createDefaultConfig(), sink)
	require.NoError(t, err)

	escaped := `"{\"customer\": \"` + strings.Replace(plantedEmail, "@", `\u0040`, 1) + `\", \"note\": \"line\nbreak\"}"`
	malformed := `"order \q of ` + strings.Replace(plantedEmail, "@", `\u0040`, 1) + `"`
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	a := spans.AppendEmpty()
	a.Attributes().PutStr("gen_ai.tool.call.result", escaped)
	b := spans.AppendEmpty()
	b.Attributes().PutStr("gen_ai.tool.call.result", malformed)
	setIDs(spans)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))

	out := sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	got, _ := out.At(0).Attributes().Get("gen_ai.tool.call.result")
	var dec string
	require.NoError(t, json.Unmarshal([]byte(got.Str()), &dec), got.Str())
	assert.NotContains(t, dec, plantedEmail)
	assert.Contains(t, dec, `"customer": "email:`)
	kept, _ := out.At(1).Attributes().Get("gen_ai.tool.call.result")
	assert.Equal(t, malformed, kept.Str())
	metadatatest.AssertEqualProcessorAgentRedactionMalformedJSON(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
