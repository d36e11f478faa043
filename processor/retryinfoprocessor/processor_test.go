// SPDX-License-Identifier: Apache-2.0

package retryinfoprocessor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/runagain/runagain/internal/testutil/collectortest"
	"github.com/runagain/runagain/processor/retryinfoprocessor/internal/metadata"
)

func retryDelay(t *testing.T, err error) (codes.Code, time.Duration, bool) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "a gRPC status: %v", err)
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return st.Code(), ri.GetRetryDelay().AsDuration(), true
		}
	}
	return st.Code(), 0, false
}

func TestRefusal(t *testing.T) {
	m := newMapper(&Config{OverloadDelay: 2 * time.Second, UnavailableDelay: 7 * time.Second})
	memory := errors.New(MemoryRefusedMessage)
	for name, tc := range map[string]struct {
		err       error
		code      codes.Code
		delay     time.Duration
		unchanged bool
	}{
		"memory_limiter":             {err: memory, code: codes.ResourceExhausted, delay: 2 * time.Second},
		"memory_limiter, wrapped":    {err: fmt.Errorf("traces: %w", memory), code: codes.ResourceExhausted, delay: 2 * time.Second},
		"plain error (a full disk)":  {err: errors.New("sqlite hot tier: database or disk is full"), code: codes.Unavailable, delay: 7 * time.Second},
		"UNAVAILABLE without info":   {err: status.Error(codes.Unavailable, "down"), code: codes.Unavailable, delay: 7 * time.Second},
		"RESOURCE_EXHAUSTED":         {err: status.Error(codes.ResourceExhausted, "queue is full"), code: codes.ResourceExhausted, delay: 2 * time.Second},
		"permanent":                  {err: consumererror.NewPermanent(errors.New("2 spans with all-zero ids")), unchanged: true},
		"INVALID_ARGUMENT status":    {err: status.Error(codes.InvalidArgument, "bad"), unchanged: true},
		"status with its own delay":  {err: mustInfo(codes.Unavailable, 30*time.Second), unchanged: true},
		"joined with a memory error": {err: errors.Join(errors.New("warm tier: x"), memory), code: codes.ResourceExhausted, delay: 2 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			got := m.refusal(tc.err)
			if tc.unchanged {
				assert.Equal(t, tc.err, got)
				return
			}
			code, delay, ok := retryDelay(t, got)
			require.True(t, ok, "RetryInfo attached")
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.delay, delay)
			assert.Contains(t, status.Convert(got).Message(), status.Convert(tc.err).Message(), "the reason is kept")
		})
	}
	assert.NoError(t, m.refusal(nil))
}

func mustInfo(c codes.Code, d time.Duration) error {
	st, err := status.New(c, "x").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// refusing is a next consumer that refuses every request with err.
type refusing struct{ err error }

func (r refusing) ConsumeTraces(context.Context, ptrace.Traces) error { return r.err }
func (refusing) Capabilities() consumer.Capabilities                  { return consumer.Capabilities{} }

// startOTLP starts the core otlp receiver on 127.0.0.1 (gRPC and HTTP ports) in front of next.
// When Start fails, what it bound is released and the error returned.
func startOTLP(t *testing.T, next consumer.Traces, grpcPort, httpPort int) (receiver.Traces, error) {
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"protocols": map[string]any{
		"grpc": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", grpcPort)},
		"http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", httpPort)}}}).Unmarshal(cfg))
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(component.MustNewType("otlp")), cfg, next)
	require.NoError(t, err)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		require.NoError(t, r.Shutdown(context.Background()), "shutdown after the failed start")
		return nil, err
	}
	return r, nil
}

// TestOTLPBindErrorIsAddrInUse: the otlp receiver's Start error on a taken port (gRPC or HTTP)
// wraps EADDRINUSE, which is what collectortest.StartOnFreePorts retries on; if a core release
// stopped wrapping it, TestThroughTheOTLPReceiver would fail on a port race instead of retrying.
func TestOTLPBindErrorIsAddrInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	for _, which := range []string{"grpc", "http"} {
		g, h := port, collectortest.FreePort(t)
		if which == "http" {
			g, h = collectortest.FreePort(t), port
		}
		r, err := startOTLP(t, consumertest.NewNop(), g, h)
		if r != nil {
			require.NoError(t, r.Shutdown(context.Background()))
		}
		require.Error(t, err, which)
		assert.ErrorIs(t, err, syscall.EADDRINUSE, which)
	}
}

// TestThroughTheOTLPReceiver runs the core otlp receiver (v0.165) in front of the processor in
// front of a consumer refusing as memory_limiter does, or as a full disk does: over gRPC the
// client gets RESOURCE_EXHAUSTED / UNAVAILABLE with RetryInfo, over HTTP 429 / 503 with
// Retry-After. Without the processor, the same refusal reaches the client with no delay.
func TestThroughTheOTLPReceiver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wrap     bool
		code     codes.Code
		httpCode int
		after    string
	}{
		{"memory_limiter", errors.New(MemoryRefusedMessage), true, codes.ResourceExhausted, http.StatusTooManyRequests, "1"},
		{"full disk", errors.New("sqlite hot tier: database or disk is full"), true, codes.Unavailable, http.StatusServiceUnavailable, "5"},
		{"memory_limiter, no retry_info", errors.New(MemoryRefusedMessage), false, codes.Unavailable, http.StatusServiceUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var next consumer.Traces = refusing{tc.err}
			if tc.wrap {
				p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(metadata.Type), createDefaultConfig(), next)
				require.NoError(t, err)
				next = p
			}
			// The receiver binds the endpoints it is given; a port taken by another process
			// between FreePort and its bind fails Start and is retried on fresh ports.
			var r receiver.Traces
			ports := collectortest.StartOnFreePorts(t, 2, func(ports []int) (err error) {
				r, err = startOTLP(t, next, ports[0], ports[1])
				return err
			})
			defer func() { require.NoError(t, r.Shutdown(context.Background())) }()
			grpcAddr, httpAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])

			td := ptrace.NewTraces()
			td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("chat")
			conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			_, err = ptraceotlp.NewGRPCClient(conn).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
			require.Error(t, err)
			code, delay, ok := retryDelay(t, err)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.wrap, ok, "RetryInfo present only with the processor")
			if tc.wrap {
				assert.Positive(t, delay)
			}

			body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			require.NoError(t, err)
			resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.httpCode, resp.StatusCode)
			assert.Equal(t, tc.after, resp.Header.Get("Retry-After"))
		})
	}
}
