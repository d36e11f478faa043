// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor // import "github.com/runagain/runagain/processor/agentredactionprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadata"
)

// NewFactory returns the factory of the agent_redaction processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{HashKeyEnv: DefaultHashKeyEnv, RefuseInvalidSpans: true, CleanCacheMiB: DefaultCleanCacheMiB,
		RepeatedSecretTraces: DefaultRepeatedSecretTraces,
		SealOriginals:        SealConfig{KeyEnv: seal.DefaultKeyEnv}}
}

var capabilities = processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true})

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := newRedactionProcessor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces, capabilities,
		processorhelper.WithShutdown(p.shutdown))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := newRedactionProcessor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs, capabilities,
		processorhelper.WithShutdown(p.shutdown))
}
