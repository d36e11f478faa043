// SPDX-License-Identifier: Apache-2.0

// Package otlpclient is the one OTLP/gRPC client of the CLI: `runagain import` sends imported
// traces with it, and the record/replay proxy sends its fixture spans and divergence log records
// with it. It wraps pdata's standard clients (ptraceotlp, plogotlp) with what both need: one
// endpoint syntax and TLS rule, requests split under the receiver's size limit, retries of an
// unavailable or overloaded collector, partial success reported, and one set of error messages.
//
// (`runagain loadgen` does not use it: it drives the OpenTelemetry SDK's own exporters, as the
// agents it imitates do.)
package otlpclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcinsecure "google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	// DefaultMaxRequestBytes is the default bound on one export request's protobuf size:
	// 3.75 MiB, below the 4 MiB gRPC receive limit a collector's otlp receiver has by default.
	DefaultMaxRequestBytes = 4<<20 - 256<<10
	// MaxSendMsgBytes is the client's gRPC send limit (256 MiB). A single span larger than
	// MaxRequestBytes (one attribute can be several MB) is sent alone in a request of its own
	// size; the receiver must accept it (otlp receiver protocols.grpc.max_recv_msg_size_mib).
	MaxSendMsgBytes = 256 << 20
	// DefaultTimeout bounds one export request.
	DefaultTimeout = 30 * time.Second
	// DefaultRetries is how many times a request is retried when Options.Retries is 0.
	DefaultRetries = 4
)

// Options configure a Client. The zero value is TLS with the defaults below.
type Options struct {
	// Insecure selects plaintext gRPC; an https:// endpoint is TLS regardless.
	Insecure bool
	// MaxRequestBytes bounds each trace request's protobuf size (see Split); 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a request failing with Unavailable or ResourceExhausted is
	// retried (backoff from 200 ms, doubling); 0 means DefaultRetries. Negative disables retries.
	Retries int
	// Headers are gRPC metadata sent with every request (keys lower case), e.g. the
	// authorization of a gateway behind an authenticator extension.
	Headers map[string]string
}

// Client exports traces and logs to one collector. Its ConsumeTraces and ConsumeLogs make it a
// sink for the proxy (the collector's consumer method names). Safe for concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	traces ptraceotlp.GRPCClient
	logs   plogotlp.GRPCClient
	o      Options
}

// Dial connects to an OTLP gRPC endpoint: "host:port", or with an http:// or https:// prefix
// (https meaning TLS). TLS uses the system roots, TLS 1.2 at least. The connection is lazy: an
// unreachable collector shows up as send errors. Sends may be up to MaxSendMsgBytes.
func Dial(endpoint string, o Options) (*Client, error) {
	target, tlsForced := splitScheme(endpoint)
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("endpoint %q: want host:port: %w", endpoint, err)
	}
	creds := grpcinsecure.NewCredentials()
	if !o.Insecure || tlsForced {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(MaxSendMsgBytes), grpc.MaxCallRecvMsgSize(16<<20)),
	}
	if len(o.Headers) > 0 {
		md := metadata.New(o.Headers)
		dialOpts = append(dialOpts, grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.NewOutgoingContext(ctx, metadata.Join(md, outgoing(ctx))), method, req, reply, cc, opts...)
		}))
	}
	conn, err := grpc.NewClient("passthrough:///"+target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	return &Client{conn: conn, traces: ptraceotlp.NewGRPCClient(conn), logs: plogotlp.NewGRPCClient(conn), o: o}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// SendStats describes what one SendTraces did.
type SendStats struct {
	Requests int      // export requests the collector accepted
	Spans    int      // spans in those requests
	Bytes    int      // protobuf bytes in those requests
	Warnings []string // partial-success messages that rejected nothing
}

// RejectedError reports items the collector refused (OTLP partial success).
type RejectedError struct {
	Rejected int64
	Items    string // "spans" or "log records"
	Messages []string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("collector rejected %d %s: %s", e.Rejected, e.Items, strings.Join(e.Messages, "; "))
}

// SendTraces exports td in requests of at most MaxRequestBytes. It stops at the first request
// that fails (after retries) and returns what was sent so far. Spans rejected through partial
// success are reported as a *RejectedError after all requests were sent.
func (c *Client) SendTraces(ctx context.Context, td ptrace.Traces) (SendStats, error) {
	var st SendStats
	maxBytes := c.o.MaxRequestBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	chunks := Split(td, maxBytes)
	var rejected *RejectedError
	var m ptrace.ProtoMarshaler
	for i, chunk := range chunks {
		n := chunk.SpanCount()
		if n == 0 {
			continue
		}
		req := ptraceotlp.NewExportRequestFromTraces(chunk)
		resp, err := export(ctx, c.o, func(ctx context.Context) (ptraceotlp.ExportResponse, error) {
			return c.traces.Export(ctx, req)
		})
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		if err != nil {
			return st, fmt.Errorf("export request %d of %d (%d spans): %w", i+1, len(chunks), n, err)
		}
		st.Requests++
		st.Spans += n
		st.Bytes += m.TracesSize(chunk)
		ps := resp.PartialSuccess()
		switch {
		case ps.RejectedSpans() > 0:
			if rejected == nil {
				rejected = &RejectedError{Items: "spans"}
			}
			rejected.Rejected += ps.RejectedSpans()
			if ps.ErrorMessage() != "" {
				rejected.Messages = append(rejected.Messages, ps.ErrorMessage())
			}
			st.Spans -= int(min(ps.RejectedSpans(), int64(n)))
		case ps.ErrorMessage() != "":
			st.Warnings = append(st.Warnings, ps.ErrorMessage())
		}
	}
	if rejected != nil {
		return st, rejected
	}
	return st, nil
}

// SendLogs exports ld in one request, retried like a trace request; log records rejected through
// partial success are a *RejectedError. The proxy's log records (divergences) are small; ld is
// not split.
func (c *Client) SendLogs(ctx context.Context, ld plog.Logs) error {
	n := ld.LogRecordCount()
	if n == 0 {
		return nil
	}
	req := plogotlp.NewExportRequestFromLogs(ld)
	resp, err := export(ctx, c.o, func(ctx context.Context) (plogotlp.ExportResponse, error) {
		return c.logs.Export(ctx, req)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("export request 1 of 1 (%d log records): %w", n, err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedLogRecords() > 0 {
		e := &RejectedError{Rejected: ps.RejectedLogRecords(), Items: "log records"}
		if ps.ErrorMessage() != "" {
			e.Messages = []string{ps.ErrorMessage()}
		}
		return e
	}
	return nil
}

// ConsumeTraces sends td (SendTraces without the stats).
func (c *Client) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	_, err := c.SendTraces(ctx, td)
	return err
}

// ConsumeLogs sends ld (SendLogs).
func (c *Client) ConsumeLogs(ctx context.Context, ld plog.Logs) error { return c.SendLogs(ctx, ld) }

// export runs one export call with the request timeout, retrying only an unavailable or
// overloaded collector (codes Unavailable and ResourceExhausted: the otlp receiver's answers
// when the memory limiter refuses data or the collector is not up yet).
func export[R any](ctx context.Context, o Options, call func(context.Context) (R, error)) (R, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	retries := o.Retries
	if retries == 0 {
		retries = DefaultRetries
	}
	return backoff.Retry(ctx, func() (R, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r, err := call(cctx)
		if code := status.Code(err); err != nil && code != codes.Unavailable && code != codes.ResourceExhausted {
			return r, backoff.Permanent(err)
		}
		return r, err
	}, backoff.WithBackOff(exportBackOff()), backoff.WithMaxTries(uint(max(retries, 0))+1), backoff.WithMaxElapsedTime(0))
}

// exportBackOff is the wait between export attempts: 200 ms, doubling, without jitter.
func exportBackOff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: time.Minute}
}

// outgoing returns the metadata already on ctx.
func outgoing(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}

// ParseHeaders reads headers in the form of OTEL_EXPORTER_OTLP_HEADERS (OpenTelemetry's SDK
// environment variables): "key1=value1,key2=value2", keys and values URL-encoded (W3C Baggage
// syntax without properties), spaces around them ignored; keys are lower-cased (gRPC metadata).
// An entry without "=", an empty key or a bad %-escape is an error naming the entry.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("header %q: want key=value", kv)
		}
		var err error
		if k, err = url.PathUnescape(k); err != nil {
			return nil, fmt.Errorf("header %q: %w", kv, err)
		}
		if v, err = url.PathUnescape(v); err != nil {
			return nil, fmt.Errorf("header %q: %w", kv, err)
		}
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

func splitScheme(endpoint string) (target string, tlsForced bool) {
	switch {
	case strings.HasPrefix(endpoint, "https://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "https://"), "/"), true
	case strings.HasPrefix(endpoint, "http://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/"), false
	}
	return endpoint, false
}

// IsLoopback reports whether endpoint's host is localhost or a loopback IP address (where
// plaintext is the CLI's default).
func IsLoopback(endpoint string) bool {
	target, _ := splitScheme(endpoint)
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
