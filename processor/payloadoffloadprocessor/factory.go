// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package payloadoffloadprocessor implements the payload_offload processor: large agent payloads
// (GenAI message lists, tool arguments and results, HTTP bodies, log bodies) move to blob storage,
// whole and deduplicated, and a K_ref attribute with the object's URI takes their place. The
// format and the reader are in internal/payloadref.
package payloadoffloadprocessor // import "github.com/runagain/runagain/processor/payloadoffloadprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadata"
)

// NewFactory returns the payload_offload processor factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	o, err := newOffloader(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, o.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(o.start),
		processorhelper.WithShutdown(o.shutdown))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	o, err := newOffloader(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, o.processLogs,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(o.start),
		processorhelper.WithShutdown(o.shutdown))
}
