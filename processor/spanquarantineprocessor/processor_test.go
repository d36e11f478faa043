// SPDX-License-Identifier: Apache-2.0

package spanquarantineprocessor

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/processor/spanquarantineprocessor/internal/metadata"
	"github.com/runagain/runagain/processor/spanquarantineprocessor/internal/metadatatest"
)

// mixed is one request: two valid spans, one with an all-zero trace_id, one with an all-zero
// span_id, under one resource (service "svc").
func mixed() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("instr")
	add := func(name string, tid pcommon.TraceID, sid pcommon.SpanID) {
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID(tid)
		s.SetSpanID(sid)
	}
	tid := pcommon.TraceID{1, 2, 3}
	add("good-1", tid, pcommon.SpanID{1})
	add("bad-trace", pcommon.TraceID{}, pcommon.SpanID{2})
	add("good-2", tid, pcommon.SpanID{3})
	add("bad-span", tid, pcommon.SpanID{})
	return td
}

// TestQuarantineKeepsValidNeighbours: the valid spans of a request go on; the invalid ones are in
// the hot tier's dead-letter table once each (the request sent twice, as a client retrying),
// with their reason, resource and scope, and counted per reason.
func TestQuarantineKeepsValidNeighbours(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := runagainstorageextension.NewDefaultConfig()
	sc.Hot = configoptional.Some(runagainstorageextension.HotConfig{Retention: runagainstorageextension.DefaultHotRetention,
		SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
	host, _ := storagetest.Start(t, sc)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	sink := &consumertest.TracesSink{}
	p, err := NewFactory().CreateTraces(ctx, set, createDefaultConfig(), sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(ctx) }()
	for i := 0; i < 2; i++ {
		if err := p.ConsumeTraces(ctx, mixed()); err != nil {
			t.Fatalf("consume: %v, want the valid spans accepted", err)
		}
	}
	if n := sink.SpanCount(); n != 4 {
		t.Fatalf("passed on %d spans, want the 2 valid ones of each request", n)
	}
	for _, td := range sink.AllTraces() {
		spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		if spans.At(0).Name() != "good-1" || spans.At(1).Name() != "good-2" {
			t.Fatalf("passed on %q, %q", spans.At(0).Name(), spans.At(1).Name())
		}
	}
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	got, err := db.Quarantined(ctx, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("quarantined %+v %v, want the 2 invalid spans once each", got, err)
	}
	byName := map[string]string{}
	for _, q := range got {
		byName[q.Name] = q.Reason
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(q.OTLP))
		if err != nil || td.SpanCount() != 1 || q.Service != "svc" ||
			td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().Name() != "instr" {
			t.Fatalf("row %+v: %v, want the span alone with its resource and scope", q, err)
		}
	}
	if byName["bad-trace"] != ReasonZeroTraceID || byName["bad-span"] != ReasonZeroSpanID {
		t.Fatalf("reasons %v", byName)
	}
	metadatatest.AssertEqualProcessorSpanQuarantineQuarantinedSpans(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("reason", ReasonZeroTraceID)), Value: 2},
		{Attributes: attribute.NewSet(attribute.String("reason", ReasonZeroSpanID)), Value: 2},
	}, metricdatatest.IgnoreTimestamp())
}

// TestNoTableRefuses: without a dead-letter table a request holding an invalid span is refused
// whole with INVALID_ARGUMENT (nothing could keep that span), and a valid one passes.
func TestNoTableRefuses(t *testing.T) {
	ctx := context.Background()
	sink := &consumertest.TracesSink{}
	p, err := NewFactory().CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), createDefaultConfig(), sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	err = p.ConsumeTraces(ctx, mixed())
	if status.Code(err) != codes.InvalidArgument || sink.SpanCount() != 0 {
		t.Fatalf("err %v, %d spans passed: want INVALID_ARGUMENT and none", err, sink.SpanCount())
	}
}
