// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadatatest"
)

// TestInvalidIDsRefused: a request holding a span with an all-zero trace id or span id is refused
// as a whole with a permanent error naming the reason (the otlp receiver answers
// INVALID_ARGUMENT / HTTP 400), nothing of it goes on, and the refused spans are counted per reason.
func TestInvalidIDsRefused(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	sink := new(consumertest.TracesSink)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "k"
	require.True(t, cfg.RefuseInvalidSpans, "refusing is the default")
	p, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()

	td := newTraces()
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(1).SetTraceID(pcommon.TraceID{})
	spans.At(2).SetSpanID(pcommon.SpanID{})
	err = p.ConsumeTraces(context.Background(), td)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "not retryable: %v", err)
	st, ok := status.FromError(err)
	require.True(t, ok)
	assert.Equal(t, codes.InvalidArgument, st.Code(), "the otlp receiver answers INVALID_ARGUMENT / HTTP 400")
	assert.Contains(t, err.Error(), "2 of 3 spans have an invalid id (1 with an all-zero trace_id, 1 with an all-zero span_id")
	assert.Contains(t, err.Error(), "first: resource_spans[0].scope_spans[0].spans[1]")
	assert.NotContains(t, err.Error(), "POST", "the error never carries span content")
	assert.Zero(t, sink.SpanCount(), "nothing of a refused request goes on")

	metadatatest.AssertEqualProcessorAgentRedactionRefusedSpans(t, tel, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "zero_trace_id"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "zero_span_id"))},
	}, metricdatatest.IgnoreTimestamp())

	// valid spans pass
	require.NoError(t, p.ConsumeTraces(context.Background(), newTraces()))
	assert.Equal(t, 3, sink.SpanCount())
}
