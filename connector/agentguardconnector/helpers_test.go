// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/pricing"
)

// t0 is the time of the first span of every scenario; the fake clock starts one hour later.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

var harnessN int

// harness runs one agent_guard connector id with both signals wired as the collector does:
// every traces batch goes to the traces->metrics and the traces->logs instance.
type harness struct {
	t     testing.TB
	clock *clockwork.FakeClock
	tm    connector.Traces
	tl    connector.Traces
	ms    *consumertest.MetricsSink
	ls    *consumertest.LogsSink
	g     *guard
}

func newHarness(t testing.TB, cfg *Config) *harness {
	t.Helper()
	return newHarnessOn(t, cfg, componenttest.NewNopHost())
}

// withPrices is a host holding a runagain_storage extension whose pricing is p: the prices
// agent_guard uses (it has none of its own).
func withPrices(t testing.TB, p pricing.Config) component.Host {
	t.Helper()
	sc := runagainstorageextension.NewDefaultConfig()
	sc.Pricing = p
	host, _ := storagetest.Start(t, sc)
	return host
}

// newHarnessOn is newHarness with the instances started on host.
func newHarnessOn(t testing.TB, cfg *Config, host component.Host) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	h := &harness{t: t, clock: clockwork.NewFakeClockAt(t0.Add(time.Hour)), ms: &consumertest.MetricsSink{}, ls: &consumertest.LogsSink{}}
	ctx := clockwork.AddToContext(context.Background(), h.clock)
	set := connectortest.NewNopSettings(metadata.Type)
	harnessN++
	set.ID = component.NewIDWithName(metadata.Type, fmt.Sprintf("h%d", harnessN))
	f := NewFactory()
	var err error
	h.tm, err = f.CreateTracesToMetrics(ctx, set, cfg, h.ms)
	require.NoError(t, err)
	h.tl, err = f.CreateTracesToLogs(ctx, set, cfg, h.ls)
	require.NoError(t, err)
	require.NoError(t, h.tm.Start(ctx, host))
	require.NoError(t, h.tl.Start(ctx, host))
	h.g = h.tm.(*handle).g
	t.Cleanup(func() {
		require.NoError(t, h.tm.Shutdown(context.Background()))
		require.NoError(t, h.tl.Shutdown(context.Background()))
	})
	return h
}

// feed sends one batch to both instances, flushes the metrics as the flush ticker does (at the
// same clock time), and returns what this batch produced.
func (h *harness) feed(td ptrace.Traces) (pmetric.Metrics, plog.Logs) {
	h.t.Helper()
	nm, nl := len(h.ms.AllMetrics()), len(h.ls.AllLogs())
	require.NoError(h.t, h.tm.ConsumeTraces(context.Background(), td))
	require.NoError(h.t, h.tl.ConsumeTraces(context.Background(), td))
	h.g.flush(context.Background())
	md, ld := pmetric.NewMetrics(), plog.NewLogs()
	for _, m := range h.ms.AllMetrics()[nm:] {
		m.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	for _, l := range h.ls.AllLogs()[nl:] {
		l.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	}
	return md, ld
}

// expireIdle advances the fake clock by d and ends idle sessions, as the expiry ticker does.
func (h *harness) expireIdle(d time.Duration) {
	h.clock.Advance(d)
	h.g.expire()
}

// traceBuilder writes spans into ptrace.Traces, one ResourceSpans per (batch, service).
type traceBuilder struct {
	td ptrace.Traces
	ss map[string]ptrace.SpanSlice
}

func newTraceBuilder() *traceBuilder {
	return &traceBuilder{td: ptrace.NewTraces(), ss: map[string]ptrace.SpanSlice{}}
}

// nextBatch makes the following spans go to new ResourceSpans (scenarios split the input into
// batches by ResourceSpans).
func (b *traceBuilder) nextBatch() { b.ss = map[string]ptrace.SpanSlice{} }

func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[8:], n)
	id[0] = 0xa0
	return id
}

func spanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	id[0] = 0x5a
	return id
}

// span adds a span; attrs values are strings, int64, float64, bool or []any.
func (b *traceBuilder) span(service string, trace, span uint64, start time.Time, d time.Duration, attrs map[string]any) ptrace.Span {
	ss, ok := b.ss[service]
	if !ok {
		rs := b.td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		sc := rs.ScopeSpans().AppendEmpty()
		sc.Scope().SetName("agentguard-test")
		ss = sc.Spans()
		b.ss[service] = ss
	}
	sp := ss.AppendEmpty()
	sp.SetTraceID(traceID(trace))
	sp.SetSpanID(spanID(span))
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
	if op, ok := attrs["gen_ai.operation.name"].(string); ok {
		sp.SetName(op)
	}
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return sp
}

// batches splits td into one ptrace.Traces per ResourceSpans.
func batches(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		b := ptrace.NewTraces()
		td.ResourceSpans().At(i).CopyTo(b.ResourceSpans().AppendEmpty())
		out = append(out, b)
	}
	return out
}

// alertsOf returns the alert log records in ld.
func alertsOf(ld plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			for k := 0; k < sls.At(j).LogRecords().Len(); k++ {
				out = append(out, sls.At(j).LogRecords().At(k))
			}
		}
	}
	return out
}

func attrStr(m pcommon.Map, k string) string {
	v, ok := m.Get(k)
	if !ok {
		return ""
	}
	return v.AsString()
}

func attrInt(m pcommon.Map, k string) int64 {
	v, ok := m.Get(k)
	if !ok {
		return -1
	}
	return v.Int()
}

// sumPoints calls fn for every sum data point of the named metric.
func sumPoints(md pmetric.Metrics, name string, fn func(res pcommon.Map, dp pmetric.NumberDataPoint)) {
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				if m := ms.At(k); m.Name() == name && m.Type() == pmetric.MetricTypeSum {
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						fn(rm.Resource().Attributes(), m.Sum().DataPoints().At(d))
					}
				}
			}
		}
	}
}
