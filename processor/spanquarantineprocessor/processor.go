// SPDX-License-Identifier: Apache-2.0

package spanquarantineprocessor // import "github.com/runagain/runagain/processor/spanquarantineprocessor"

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/partialsuccess"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/processor/spanquarantineprocessor/internal/metadata"
)

// Reasons a span is quarantined (the reason attribute of the metric and column of the table).
const (
	ReasonZeroTraceID = "zero_trace_id"
	ReasonZeroSpanID  = "zero_span_id"
)

type quarantineProcessor struct {
	cfg       *Config
	next      consumer.Traces
	telemetry *metadata.TelemetryBuilder
	logger    *zap.Logger
	w         runagainstorageextension.QuarantineWriter // nil: refuse requests with invalid spans
	now       func() time.Time
}

func (p *quarantineProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// Start finds the dead-letter table through the runagain_storage extension. Without one the
// processor refuses (whole) any request holding an invalid span, and says so once here.
func (p *quarantineProcessor) Start(_ context.Context, host component.Host) error {
	if p.now == nil {
		p.now = time.Now
	}
	st, err := runagainstorageextension.Find(host, p.cfg.Storage)
	if err != nil {
		return err
	}
	why := "no runagain_storage extension"
	if q, ok := st.(runagainstorageextension.Quarantiner); ok {
		if p.w, err = q.QuarantineWriter(); err == nil {
			return nil
		}
		why = err.Error()
	}
	p.logger.Warn("span_quarantine: no dead-letter table; a request holding a span with an all-zero id is refused whole (INVALID_ARGUMENT)", zap.String("reason", why))
	return nil
}

func (p *quarantineProcessor) Shutdown(context.Context) error { return nil }

// reasonOf says why span s cannot be stored as a span ("" when it can). OTLP: "An ID with all
// zeroes OR of length other than 16 bytes is considered invalid" (pdata ids have their length).
func reasonOf(s ptrace.Span) string {
	switch {
	case s.TraceID().IsEmpty():
		return ReasonZeroTraceID
	case s.SpanID().IsEmpty():
		return ReasonZeroSpanID
	}
	return ""
}

// ConsumeTraces keeps each invalid span in the dead-letter table and passes the rest on. A
// failed write of the table fails the request (retryable: the client sends it again, and the
// table keeps each span once); with no span left, the request is answered with success.
func (p *quarantineProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var bad []store.QuarantinedSpan
	counts := map[string]int64{}
	first := ""
	now := p.now()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				reason := reasonOf(s)
				if reason == "" {
					continue
				}
				counts[reason]++
				if first == "" {
					first = fmt.Sprintf("resource_spans[%d].scope_spans[%d].spans[%d]", i, j, k)
				}
				if p.w != nil {
					q, err := record(rs, ss, s, reason, now)
					if err != nil {
						return consumererror.NewPermanent(err)
					}
					bad = append(bad, q)
				}
			}
		}
	}
	if len(counts) == 0 {
		return p.next.ConsumeTraces(ctx, td)
	}
	if p.w == nil {
		// a gRPC status on the error sets the otlp receiver's answer: INVALID_ARGUMENT, HTTP 400
		return consumererror.NewPermanent(status.Errorf(codes.InvalidArgument,
			"request refused, no span of it kept: %d of %d spans have an all-zero trace_id or span_id (OTLP requires non-zero ids) and no dead-letter table is configured; first: %s",
			counts[ReasonZeroTraceID]+counts[ReasonZeroSpanID], td.SpanCount(), first))
	}
	if err := p.w.Quarantine(ctx, bad); err != nil {
		return err
	}
	for reason, n := range counts {
		p.telemetry.ProcessorSpanQuarantineQuarantinedSpans.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
	}
	// OTLP partial success, sent when the receiver is wrapped by the partial_success extension:
	// the spans are not stored as spans, so they count as rejected; the message says where
	// they are kept.
	nBad := counts[ReasonZeroTraceID] + counts[ReasonZeroSpanID]
	partialsuccess.Reject(ctx, nBad, fmt.Sprintf(
		"%d of %d spans not stored as spans: all-zero trace_id or span_id (OTLP requires non-zero ids); %s; first: %s",
		nBad, td.SpanCount(), partialsuccess.KeptInQuarantine, first))
	rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool { return reasonOf(s) != "" })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	if td.SpanCount() == 0 {
		return nil
	}
	return p.next.ConsumeTraces(ctx, td)
}

var jsonMarshaler ptrace.JSONMarshaler

// record builds the dead-letter row of span s: the span alone with copies of its resource and
// scope, as OTLP JSON.
func record(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, s ptrace.Span, reason string, now time.Time) (store.QuarantinedSpan, error) {
	one := ptrace.NewTraces()
	ors := one.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(ors.Resource())
	ors.SetSchemaUrl(rs.SchemaUrl())
	oss := ors.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(oss.Scope())
	oss.SetSchemaUrl(ss.SchemaUrl())
	s.CopyTo(oss.Spans().AppendEmpty())
	doc, err := jsonMarshaler.MarshalTraces(one)
	if err != nil {
		return store.QuarantinedSpan{}, fmt.Errorf("span_quarantine: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(reason))
	h.Write([]byte{'\n'})
	h.Write(doc)
	service := ""
	if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
		service = v.AsString()
	}
	tid, sid := s.TraceID(), s.SpanID()
	return store.QuarantinedSpan{
		ID: hex.EncodeToString(h.Sum(nil)), Received: now, Reason: reason,
		TraceID: hex.EncodeToString(tid[:]), SpanID: hex.EncodeToString(sid[:]),
		Name: s.Name(), Service: service, OTLP: string(doc),
	}, nil
}
