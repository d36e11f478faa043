// SPDX-License-Identifier: Apache-2.0

package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
)

// A warm or cold tier whose backend builds its records apart from writing them
// (runagainstorageextension.RecordBackend) is given, in its sending queue, the records of each
// request (store.Records: span summaries and key events, or session partials) instead of the
// request: the queue persists a few compressed bytes per span (store.MarshalRecords), its
// batches merge by appending records, and the writer takes them as they are. The records are
// built in ConsumeTraces/ConsumeLogs, before the request is acknowledged, so an acknowledged
// span's records are in the persistent queue exactly as its trimmed spans were before.

// recordsRequest is one sending-queue request of records.
type recordsRequest struct {
	r store.Records
}

var _ xexporterhelper.Request = (*recordsRequest)(nil)

func (q *recordsRequest) ItemsCount() int { return q.r.Items() }

// BytesSize is the records' size as the `bytes` sizer counts it: their encoded form before
// compression, estimated (store.Records.Bytes).
func (q *recordsRequest) BytesSize() int { return q.r.Bytes() }

// MergeSplit moves other's records (if any) to the end of q's, as the pdata requests do (the
// batcher owns both), and cuts the result into parts of at most maxSize (items or estimated
// bytes; requests are never cut; 0 is no limit).
func (q *recordsRequest) MergeSplit(_ context.Context, maxSize int, szt exporterhelper.RequestSizerType, other xexporterhelper.Request) ([]xexporterhelper.Request, error) {
	if other != nil {
		o, ok := other.(*recordsRequest)
		if !ok {
			return nil, fmt.Errorf("tiered exporter: cannot merge %T into a records request", other)
		}
		q.r.Append(o.r)
		o.r = store.Records{}
	}
	if maxSize <= 0 || szt == exporterhelper.RequestSizerTypeRequests {
		return []xexporterhelper.Request{q}, nil
	}
	parts := q.r.Split(maxSize, szt == exporterhelper.RequestSizerTypeBytes)
	out := make([]xexporterhelper.Request, len(parts))
	for i, p := range parts {
		out[i] = &recordsRequest{r: p}
	}
	return out, nil
}

// recordsEncoding is how the sending queue persists records requests (store.MarshalRecords).
// An entry that is not records was queued by an earlier build, which persisted the trimmed
// OTLP request: it is decoded as such and turned into records, so an upgrade loses nothing.
type recordsEncoding struct {
	b   runagainstorageextension.RecordBackend
	sig signal
}

func (e recordsEncoding) Marshal(_ context.Context, req xexporterhelper.Request) ([]byte, error) {
	q, ok := req.(*recordsRequest)
	if !ok {
		return nil, fmt.Errorf("tiered exporter: cannot persist %T", req)
	}
	return store.MarshalRecords(q.r)
}

func (e recordsEncoding) Unmarshal(b []byte) (context.Context, xexporterhelper.Request, error) {
	if store.IsRecords(b) {
		r, err := store.UnmarshalRecords(b)
		if err != nil {
			return context.Background(), nil, err
		}
		return context.Background(), &recordsRequest{r: r}, nil
	}
	switch e.sig {
	case signalTraces:
		ctx, td, err := pdatareq.UnmarshalTraces(b)
		if errors.Is(err, pdatareq.ErrInvalidFormat) {
			ctx = context.Background()
			td, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
		}
		if err != nil {
			return ctx, nil, err
		}
		return ctx, &recordsRequest{r: e.b.TraceRecords(td)}, nil
	default:
		ctx, ld, err := pdatareq.UnmarshalLogs(b)
		if errors.Is(err, pdatareq.ErrInvalidFormat) {
			ctx = context.Background()
			ld, err = (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
		}
		if err != nil {
			return ctx, nil, err
		}
		return ctx, &recordsRequest{r: e.b.LogRecords(ld)}, nil
	}
}

// writeRecords is the records pipeline's consume function: the backend writes the records.
func writeRecords(b runagainstorageextension.RecordBackend) xexporterhelper.RequestConsumeFunc {
	return func(ctx context.Context, req xexporterhelper.Request) error {
		q, ok := req.(*recordsRequest)
		if !ok {
			return fmt.Errorf("tiered exporter: unexpected request %T", req)
		}
		return b.WriteRecords(ctx, q.r)
	}
}
