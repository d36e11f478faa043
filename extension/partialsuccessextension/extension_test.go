// SPDX-License-Identifier: Apache-2.0

package partialsuccessextension

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/partialsuccess"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// rejecting rejects every span named "bad" through internal/partialsuccess, as span_quarantine
// does, and accepts the request.
func rejecting() consumer.Traces {
	c, _ := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		var n int64
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			spans := rss.At(i).ScopeSpans().At(0).Spans()
			for k := 0; k < spans.Len(); k++ {
				if spans.At(k).Name() == "bad" {
					n++
				}
			}
		}
		partialsuccess.Reject(ctx, n, fmt.Sprintf("%d spans quarantined", n))
		return nil
	})
	return c
}

// startOTLP starts core's otlp receiver on gRPC and HTTP with the extension named in both
// protocols' middlewares, as config/default.yaml does.
func startOTLP(t *testing.T, next consumer.Traces, grpcPort, httpPort int) (receiver.Traces, error) {
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	mw := []any{map[string]any{"id": "partial_success"}}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"protocols": map[string]any{
		"grpc": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", grpcPort), "middlewares": mw},
		"http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", httpPort), "middlewares": mw}}}).Unmarshal(cfg))
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(NewFactory().Type()), createDefaultConfig())
	require.NoError(t, err)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(component.MustNewType("otlp")), cfg, next)
	require.NoError(t, err)
	if err := r.Start(context.Background(), host{component.MustNewID("partial_success"): ext}); err != nil {
		require.NoError(t, r.Shutdown(context.Background()), "shutdown after the failed start")
		return nil, err
	}
	return r, nil
}

func request(names ...string) ptraceotlp.ExportRequest {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, n := range names {
		ss.Spans().AppendEmpty().SetName(n)
	}
	return ptraceotlp.NewExportRequestFromTraces(td)
}

// TestPartialSuccessThroughTheOTLPReceiver: core's otlp receiver wrapped by the extension
// answers a request with rejected spans with partial_success (rejected_spans, error_message)
// over gRPC and over HTTP in protobuf and JSON, and a request with none with an empty
// partial_success, as before.
func TestPartialSuccessThroughTheOTLPReceiver(t *testing.T) {
	var r receiver.Traces
	ports := collectortest.StartOnFreePorts(t, 2, func(ports []int) (err error) {
		r, err = startOTLP(t, rejecting(), ports[0], ports[1])
		return err
	})
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()
	grpcAddr, httpURL := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports[1])

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	resp, err := client.Export(context.Background(), request("good", "bad", "bad"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), resp.PartialSuccess().RejectedSpans(), "gRPC")
	assert.Equal(t, "2 spans quarantined", resp.PartialSuccess().ErrorMessage())
	resp, err = client.Export(context.Background(), request("good"))
	require.NoError(t, err)
	assert.Equal(t, int64(0), resp.PartialSuccess().RejectedSpans(), "gRPC, nothing rejected")
	assert.Empty(t, resp.PartialSuccess().ErrorMessage())

	for _, enc := range []string{"application/x-protobuf", "application/json"} {
		for _, names := range [][]string{{"bad", "good"}, {"good"}} {
			req := request(names...)
			var body []byte
			if enc == "application/json" {
				body, err = req.MarshalJSON()
			} else {
				body, err = req.MarshalProto()
			}
			require.NoError(t, err)
			hr, err := http.Post(httpURL, enc, bytes.NewReader(body))
			require.NoError(t, err)
			got, err := io.ReadAll(hr.Body)
			require.NoError(t, err)
			hr.Body.Close()
			require.Equal(t, http.StatusOK, hr.StatusCode, "%s %v: %s", enc, names, got)
			assert.Equal(t, enc, hr.Header.Get("Content-Type"))
			out := ptraceotlp.NewExportResponse()
			if enc == "application/json" {
				require.NoError(t, out.UnmarshalJSON(got), "%s", got)
			} else {
				require.NoError(t, out.UnmarshalProto(got))
			}
			want := int64(len(names) - 1)
			assert.Equal(t, want, out.PartialSuccess().RejectedSpans(), "%s %v", enc, names)
			if want > 0 {
				assert.Equal(t, "1 spans quarantined", out.PartialSuccess().ErrorMessage(), enc)
			}
		}
	}
}

// TestRejectWithoutResult: a pipeline not behind the extension (no Result in the context) can
// call Reject; it reports that no client will learn of it.
func TestRejectWithoutResult(t *testing.T) {
	assert.False(t, partialsuccess.Reject(context.Background(), 1, "x"))
	ctx, res := partialsuccess.NewContext(context.Background())
	assert.True(t, partialsuccess.Reject(ctx, 1, "a"))
	assert.True(t, partialsuccess.Reject(ctx, 2, "b"))
	n, msg := res.Rejected()
	assert.Equal(t, int64(3), n)
	assert.Equal(t, "a; b", msg)
}
