// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package spanquarantineprocessor implements the span_quarantine processor: it takes out of each
// traces request the spans no tier can store as spans (an all-zero trace_id or span_id, invalid
// per the OTLP specification), keeps each whole (the span with its resource and scope, as OTLP
// JSON, with the reason) in the hot tier's dead-letter table through the runagain_storage
// extension, counts it, and passes the request's valid spans on. A bad span never takes its
// valid neighbours down.
package spanquarantineprocessor // import "github.com/runagain/runagain/processor/spanquarantineprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/runagain/runagain/processor/spanquarantineprocessor/internal/metadata"
)

// NewFactory returns the span_quarantine processor's factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &quarantineProcessor{cfg: cfg.(*Config), next: next, telemetry: tb, logger: set.Logger}, nil
}
