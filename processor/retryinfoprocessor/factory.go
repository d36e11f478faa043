// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package retryinfoprocessor implements the retry_info processor: placed first in a pipeline
// behind the otlp receiver, it turns every retryable refusal that comes back from the pipeline
// (memory_limiter, an exporter that could not take the data) into a gRPC status with
// google.rpc.RetryInfo, so OTLP clients are told how long to wait: gRPC RESOURCE_EXHAUSTED or
// UNAVAILABLE with the RetryInfo detail, HTTP 429 or 503 with Retry-After.
package retryinfoprocessor // import "github.com/runagain/runagain/processor/retryinfoprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/runagain/runagain/processor/retryinfoprocessor/internal/metadata"
)

// NewFactory returns the retry_info processor's factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithTraces(func(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
			return &tracesProcessor{base: base{mapper: newMapper(cfg.(*Config))}, next: next}, nil
		}, metadata.TracesStability),
		processor.WithLogs(func(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
			return &logsProcessor{base: base{mapper: newMapper(cfg.(*Config))}, next: next}, nil
		}, metadata.LogsStability),
		processor.WithMetrics(func(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
			return &metricsProcessor{base: base{mapper: newMapper(cfg.(*Config))}, next: next}, nil
		}, metadata.MetricsStability),
	)
}
