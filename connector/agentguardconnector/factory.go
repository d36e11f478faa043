// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"context"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
)

// NewFactory returns the agent_guard connector factory (traces to metrics, traces to logs).
//
// One guard (one set of session state) serves both signals of a connector id: the traces to
// metrics instance analyses each batch once and also sends the alert records to the logs
// pipeline; the traces to logs instance analyses only when no metrics pipeline uses the
// connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
		connector.WithTracesToLogs(createTracesToLogs, metadata.TracesToLogsStability),
	)
}

func createTracesToMetrics(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	h, err := acquire(set, cfg.(*Config), clockwork.FromContext(ctx))
	if err != nil {
		return nil, err
	}
	g := h.Unwrap()
	g.mu.Lock()
	g.metricsOut = next
	g.mu.Unlock()
	return &handle{Holder: h, g: g, primary: func() bool { return true }, metrics: true}, nil
}

func createTracesToLogs(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	h, err := acquire(set, cfg.(*Config), clockwork.FromContext(ctx))
	if err != nil {
		return nil, err
	}
	g := h.Unwrap()
	g.mu.Lock()
	g.logsOut = next
	g.mu.Unlock()
	return &handle{Holder: h, g: g, primary: func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.metricsOut == nil
	}}, nil
}
