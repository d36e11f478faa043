// SPDX-License-Identifier: Apache-2.0

package partialsuccessextension // import "github.com/runagain/runagain/extension/partialsuccessextension"

import (
	"context"
	"mime"
	"net/http"
	"strconv"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/runagain/runagain/internal/partialsuccess"
)

// TraceExportMethod is the gRPC method of an OTLP traces export (opentelemetry-proto
// collector/trace/v1/trace_service.proto).
const TraceExportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// Extension is the partial_success extension: a gRPC and HTTP server middleware. Each request
// it serves carries a partialsuccess.Result in its context; a successful traces export whose
// Result holds rejections is answered with ExportTraceServiceResponse.partial_success set
// (rejected_spans, error_message), over gRPC and over HTTP (protobuf or JSON, as the receiver
// answered: OTLP/HTTP "the server MUST respond with HTTP 200 OK ... with partial_success
// populated"). Any other answer (a refusal, a request with nothing rejected) passes unchanged.
type Extension struct{}

var (
	_ extension.Extension            = (*Extension)(nil)
	_ extensionmiddleware.GRPCServer = (*Extension)(nil)
	_ extensionmiddleware.HTTPServer = (*Extension)(nil)
)

// Start implements component.Component.
func (*Extension) Start(context.Context, component.Host) error { return nil }

// Shutdown implements component.Component.
func (*Extension) Shutdown(context.Context) error { return nil }

// GetGRPCServerOptions returns the unary interceptor (chained after the receiver's own, such as
// its authenticator).
func (*Extension) GetGRPCServerOptions(context.Context) ([]grpc.ServerOption, error) {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unaryInterceptor)}, nil
}

// protoMessage is what the gRPC handler's response is (pdata's generated
// ExportTraceServiceResponse, encoded by pdata's codec): filled in place from our encoding.
type protoMessage interface {
	UnmarshalProto([]byte) error
}

func unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != TraceExportMethod {
		return handler(ctx, req)
	}
	ctx, res := partialsuccess.NewContext(ctx)
	resp, err := handler(ctx, req)
	if err != nil {
		return resp, err
	}
	n, msg := res.Rejected()
	if n == 0 {
		return resp, nil
	}
	m, ok := resp.(protoMessage)
	if !ok {
		return resp, nil
	}
	body, err := Response(n, msg).MarshalProto()
	if err != nil {
		return resp, nil //nolint:nilerr // the spans are stored: answer success without the detail
	}
	if err := m.UnmarshalProto(body); err != nil {
		return resp, nil //nolint:nilerr // as above
	}
	return resp, nil
}

// Response is the ExportTraceServiceResponse of a partially accepted request: n spans rejected,
// with msg.
func Response(n int64, msg string) ptraceotlp.ExportResponse {
	r := ptraceotlp.NewExportResponse()
	r.PartialSuccess().SetRejectedSpans(n)
	r.PartialSuccess().SetErrorMessage(msg)
	return r
}

// GetHTTPHandler wraps the receiver's HTTP handler.
func (*Extension) GetHTTPHandler(context.Context) (extensionmiddleware.WrapHTTPHandlerFunc, error) {
	return func(_ context.Context, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, res := partialsuccess.NewContext(r.Context())
			next.ServeHTTP(&writer{ResponseWriter: w, res: res}, r.WithContext(ctx))
		}), nil
	}, nil
}

// writer replaces a 200 answer's body with the partial success response once the pipeline has
// returned (the receiver calls WriteHeader after it), in the answer's content type.
type writer struct {
	http.ResponseWriter
	res      *partialsuccess.Result
	wrote    bool // WriteHeader called
	replaced bool // our body written: drop the receiver's
}

func (w *writer) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code == http.StatusOK {
		if n, msg := w.res.Rejected(); n > 0 {
			if body, ok := encode(w.Header().Get("Content-Type"), Response(n, msg)); ok {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.ResponseWriter.WriteHeader(code)
				_, _ = w.ResponseWriter.Write(body)
				w.replaced = true
				return
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// encode renders r as the otlp receiver does for contentType (application/x-protobuf or
// application/json); false for any other type.
func encode(contentType string, r ptraceotlp.ExportResponse) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, false
	}
	var b []byte
	switch mt {
	case "application/x-protobuf":
		b, err = r.MarshalProto()
	case "application/json":
		b, err = r.MarshalJSON()
	default:
		return nil, false
	}
	return b, err == nil
}
