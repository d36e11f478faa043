package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/runagain/runagain/internal/importer"
)

// Sink receives what the proxy produces: fixture spans (record) and divergence log records
// (replay).
type Sink interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
	ConsumeLogs(ctx context.Context, ld plog.Logs) error
}

// OTLPSink sends to a collector over OTLP gRPC with pdata's standard clients (ptraceotlp,
// plogotlp). Traces go through importer.Sender: requests split under 3.75 MiB, retried on
// Unavailable/ResourceExhausted.
type OTLPSink struct {
	conn   *grpc.ClientConn
	traces *importer.Sender
	logs   plogotlp.GRPCClient
}

// DialOTLP connects to endpoint (host:port; https:// prefix for TLS); insecure selects
// plaintext. The connection is lazy: an unreachable collector shows up as send errors.
func DialOTLP(endpoint string, insecure bool) (*OTLPSink, error) {
	conn, err := importer.Dial(endpoint, insecure)
	if err != nil {
		return nil, err
	}
	return &OTLPSink{conn: conn, traces: &importer.Sender{Client: ptraceotlp.NewGRPCClient(conn)}, logs: plogotlp.NewGRPCClient(conn)}, nil
}

// ConsumeTraces implements Sink.
func (s *OTLPSink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	_, err := s.traces.Send(ctx, td)
	return err
}

// ConsumeLogs implements Sink, retrying an unavailable collector for up to 10 s.
func (s *OTLPSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	req := plogotlp.NewExportRequestFromLogs(ld)
	resp, err := backoff.Retry(ctx, func() (plogotlp.ExportResponse, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return s.logs.Export(cctx, req, grpc.WaitForReady(true))
	}, backoff.WithBackOff(&backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: 5 * time.Second}),
		backoff.WithMaxTries(5), backoff.WithMaxElapsedTime(0))
	if err != nil {
		return err
	}
	if ps := resp.PartialSuccess(); ps.RejectedLogRecords() > 0 {
		return fmt.Errorf("collector rejected %d log records: %s", ps.RejectedLogRecords(), ps.ErrorMessage())
	}
	return nil
}

// Close closes the connection.
func (s *OTLPSink) Close() error { return s.conn.Close() }
