// SPDX-License-Identifier: Apache-2.0

// Package otlptest provides an in-process OTLP gRPC receiver of traces and logs for tests, built
// on pdata's ptraceotlp and plogotlp RegisterGRPCServer and listening on 127.0.0.1.
package otlptest

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/runagain/runagain/internal/store"
)

// Server records the protobuf bytes of every export request it accepts.
type Server struct {
	ptraceotlp.UnimplementedGRPCServer
	// Addr is host:port of the listener.
	Addr string

	// Logs receives the log export requests.
	Logs *LogServer

	mu       sync.Mutex
	requests [][]byte
	metadata []metadata.MD // of every request, traces and logs, in arrival order
	reply    func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error)
}

// Metadata returns the gRPC metadata of every request received so far (traces and logs).
func (s *Server) Metadata() []metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metadata.MD(nil), s.metadata...)
}

// LogServer records the log export requests.
type LogServer struct {
	plogotlp.UnimplementedGRPCServer
	mu    sync.Mutex
	logs  []plog.Logs
	reply func(req plogotlp.ExportRequest) (plogotlp.ExportResponse, error)
}

// SetReply makes f build the responses; nil restores plain success.
func (s *LogServer) SetReply(f func(req plogotlp.ExportRequest) (plogotlp.ExportResponse, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = f
}

// Export implements plogotlp.GRPCServer.
func (s *LogServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	ld := plog.NewLogs()
	req.Logs().CopyTo(ld)
	s.mu.Lock()
	s.logs = append(s.logs, ld)
	reply := s.reply
	s.mu.Unlock()
	if reply != nil {
		return reply(req)
	}
	return plogotlp.NewExportResponse(), nil
}

// Received returns the logs of the requests received so far.
func (s *LogServer) Received() []plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.Logs(nil), s.logs...)
}

// Start listens on 127.0.0.1:0 and serves until the test ends. maxRecv is the server's gRPC
// receive limit in bytes; 0 keeps grpc-go's default of 4 MiB (the collector's default too).
func Start(tb testing.TB, maxRecv int) *Server {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: lis.Addr().String(), Logs: &LogServer{}}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		s.mu.Lock()
		s.metadata = append(s.metadata, md)
		s.mu.Unlock()
		return h(ctx, req)
	})}
	if maxRecv > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(maxRecv))
	}
	gs := grpc.NewServer(opts...)
	ptraceotlp.RegisterGRPCServer(gs, s)
	plogotlp.RegisterGRPCServer(gs, s.Logs)
	go func() { _ = gs.Serve(lis) }()
	tb.Cleanup(gs.Stop)
	return s
}

// SetReply makes f build the responses (partial success, errors); nil restores plain success.
func (s *Server) SetReply(f func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = f
}

// Export implements ptraceotlp.GRPCServer.
func (s *Server) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	b, err := req.MarshalProto()
	if err != nil {
		return ptraceotlp.NewExportResponse(), err
	}
	s.mu.Lock()
	s.requests = append(s.requests, b)
	reply := s.reply
	s.mu.Unlock()
	if reply != nil {
		return reply(req)
	}
	return ptraceotlp.NewExportResponse(), nil
}

// Requests returns the protobuf bytes of the requests received so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

// Traces decodes the requests received so far.
func (s *Server) Traces(tb testing.TB) []ptrace.Traces {
	tb.Helper()
	var out []ptrace.Traces
	for _, b := range s.Requests() {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(b); err != nil {
			tb.Fatal(err)
		}
		out = append(out, req.Traces())
	}
	return out
}

// SpanCount is the number of spans received so far.
func (s *Server) SpanCount(tb testing.TB) int {
	n := 0
	for _, td := range s.Traces(tb) {
		n += td.SpanCount()
	}
	return n
}

// SpanBytes maps "traceid/spanid" (hex) of every span of td to the protobuf of a Traces holding
// only that span with its resource and scope (store.SpanTraces): a representation independent of how spans are
// grouped into requests. A span id occurring twice in td fails the test.
func SpanBytes(tb testing.TB, td ptrace.Traces) map[string][]byte {
	tb.Helper()
	var m ptrace.ProtoMarshaler
	out := map[string][]byte{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				sp := ss.Spans().At(k)
				b, err := m.MarshalTraces(store.SpanTraces(rs, ss, sp))
				if err != nil {
					tb.Fatal(err)
				}
				key := sp.TraceID().String() + "/" + sp.SpanID().String()
				if _, dup := out[key]; dup {
					tb.Fatalf("duplicate span %s", key)
				}
				out[key] = b
			}
		}
	}
	return out
}
