// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Sink receives what the proxy produces: fixture spans (record) and divergence log records
// (replay). The CLI's is an *otlpclient.Client (OTLP/gRPC to the collector: trace requests split
// under 3.75 MiB, both signals retried on Unavailable/ResourceExhausted); tests use in-memory
// sinks.
type Sink interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
	ConsumeLogs(ctx context.Context, ld plog.Logs) error
}
