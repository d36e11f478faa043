package importer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcinsecure "google.golang.org/grpc/credentials/insecure"
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
)

// Sender exports traces with pdata's standard OTLP gRPC client (ptraceotlp.GRPCClient).
type Sender struct {
	Client ptraceotlp.GRPCClient
	// MaxRequestBytes bounds each request's protobuf size (see Split); 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a request failing with Unavailable or ResourceExhausted is
	// retried (backoff from 200 ms, doubling); 0 means 4. Negative disables retries.
	Retries int
}

// SendStats describes what one Send did.
type SendStats struct {
	Requests int      // export requests the collector accepted
	Spans    int      // spans in those requests
	Bytes    int      // protobuf bytes in those requests
	Warnings []string // partial-success messages that rejected nothing
}

// RejectedError reports spans the collector refused (OTLP partial success).
type RejectedError struct {
	Rejected int64
	Messages []string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("collector rejected %d spans: %s", e.Rejected, strings.Join(e.Messages, "; "))
}

// Send exports td in requests of at most MaxRequestBytes. It stops at the first request that
// fails (after retries) and returns what was sent so far. Spans rejected through partial success
// are reported as a *RejectedError after all requests were sent.
func (s *Sender) Send(ctx context.Context, td ptrace.Traces) (SendStats, error) {
	var st SendStats
	maxBytes := s.MaxRequestBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	retries := s.Retries
	if retries == 0 {
		retries = 4
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
		resp, err := backoff.Retry(ctx, func() (ptraceotlp.ExportResponse, error) {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			r, err := s.Client.Export(cctx, req)
			if code := status.Code(err); err != nil && code != codes.Unavailable && code != codes.ResourceExhausted {
				return r, backoff.Permanent(err) // only an unavailable or overloaded collector is retried
			}
			return r, err
		}, backoff.WithBackOff(exportBackOff()), backoff.WithMaxTries(uint(max(retries, 0))+1), backoff.WithMaxElapsedTime(0))
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
				rejected = &RejectedError{}
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

// Split divides td into Traces whose protobuf encoding stays at or below maxBytes, keeping
// every span whole with its resource and scope (resource and scope are repeated in each part
// that holds their spans). A span that alone exceeds maxBytes goes into a part of its own. The
// input is not modified; when td already fits it is returned as the only part.
func Split(td ptrace.Traces, maxBytes int) []ptrace.Traces {
	var m ptrace.ProtoMarshaler
	if maxBytes <= 0 || m.TracesSize(td) <= maxBytes {
		return []ptrace.Traces{td}
	}
	// Sizes are upper bounds: each nested message costs its size plus 1 tag byte and at most
	// 5 length bytes.
	const frame = 6
	var out []ptrace.Traces
	var cur ptrace.Traces
	var curRS ptrace.ResourceSpans
	var curSS ptrace.ScopeSpans
	size := 0
	curR, curS := -1, -1
	flush := func() {
		if size > 0 {
			out = append(out, cur)
		}
		cur, size, curR, curS = ptrace.NewTraces(), 0, -1, -1
	}
	flush()
	rss := td.ResourceSpans()
	for ri := 0; ri < rss.Len(); ri++ {
		rs := rss.At(ri)
		emptyRS := ptrace.NewResourceSpans()
		rs.Resource().CopyTo(emptyRS.Resource())
		emptyRS.SetSchemaUrl(rs.SchemaUrl())
		rsCost := m.ResourceSpansSize(emptyRS) + frame
		sss := rs.ScopeSpans()
		for si := 0; si < sss.Len(); si++ {
			ss := sss.At(si)
			emptySS := ptrace.NewScopeSpans()
			ss.Scope().CopyTo(emptySS.Scope())
			emptySS.SetSchemaUrl(ss.SchemaUrl())
			ssCost := m.ScopeSpansSize(emptySS) + frame
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				need := m.SpanSize(sp) + frame
				switch {
				case curR != ri:
					need += rsCost + ssCost
				case curS != si:
					need += ssCost
				}
				if size > 0 && size+need > maxBytes {
					flush()
					need = m.SpanSize(sp) + frame + rsCost + ssCost
				}
				if curR != ri {
					curRS = cur.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(curRS.Resource())
					curRS.SetSchemaUrl(rs.SchemaUrl())
					curR, curS = ri, -1
				}
				if curS != si {
					curSS = curRS.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(curSS.Scope())
					curSS.SetSchemaUrl(ss.SchemaUrl())
					curS = si
				}
				sp.CopyTo(curSS.Spans().AppendEmpty())
				size += need
			}
		}
	}
	flush()
	return out
}

// Dial opens a client connection to an OTLP gRPC endpoint ("host:port"; an http:// or
// https:// prefix is accepted, https meaning TLS). insecure selects plaintext, else TLS with
// the system roots. Sends may be up to MaxSendMsgBytes.
func Dial(endpoint string, insecure bool) (*grpc.ClientConn, error) {
	target, tlsForced := splitScheme(endpoint)
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("endpoint %q: want host:port: %w", endpoint, err)
	}
	creds := grpcinsecure.NewCredentials()
	if !insecure || tlsForced {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	return grpc.NewClient("passthrough:///"+target,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(MaxSendMsgBytes), grpc.MaxCallRecvMsgSize(16<<20)),
	)
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

// IsLoopback reports whether endpoint's host is localhost or a loopback IP address.
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

// exportBackOff is the wait between export attempts: 200 ms, doubling, without jitter.
func exportBackOff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: time.Minute}
}
