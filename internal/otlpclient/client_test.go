// SPDX-License-Identifier: Apache-2.0

package otlpclient

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/otlpclient/otlptest"
)

func newClient(t testing.TB, addr string, o Options) *Client {
	t.Helper()
	o.Insecure = true
	if o.Retries == 0 {
		o.Retries = -1
	}
	c, err := Dial(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// bigTraces returns n small spans plus one span with an attribute of bigBytes.
func bigTraces(n, bigBytes int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "big")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	for i := 0; i < n; i++ {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID([16]byte{1})
		sp.SetSpanID([8]byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)})
		sp.SetName("small")
		sp.Attributes().PutStr("gen_ai.output.messages", strings.Repeat("x", 20000+i))
		if i == n/2 {
			sp.Attributes().PutStr("gen_ai.input.messages", strings.Repeat("é", bigBytes/2))
		}
	}
	return td
}

// TestSendSplitsLargeFiles sends ~8 MiB of spans including one span of 5 MiB: every request
// but the big span's stays under DefaultMaxRequestBytes, the big span goes alone, and every span
// arrives byte for byte with its resource and scope.
func TestSendSplitsLargeFiles(t *testing.T) {
	srv := otlptest.Start(t, 64<<20) // receiver with max_recv_msg_size_mib: 64
	snd := newClient(t, srv.Addr, Options{})
	in := bigTraces(150, 5<<20)
	st, err := snd.SendTraces(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) < 3 || st.Requests != len(reqs) || st.Spans != in.SpanCount() {
		t.Fatalf("%d requests, stats %+v", len(reqs), st)
	}
	bigSeen := false
	for i, tr := range srv.Traces(t) {
		if len(reqs[i]) > DefaultMaxRequestBytes {
			if tr.SpanCount() != 1 || len(reqs[i]) < 5<<20 {
				t.Errorf("request %d: %d bytes with %d spans over the limit", i, len(reqs[i]), tr.SpanCount())
			}
			bigSeen = true
		}
	}
	if !bigSeen {
		t.Error("the 5 MiB span was not sent")
	}
	want := otlptest.SpanBytes(t, in)
	got := map[string][]byte{}
	for _, tr := range srv.Traces(t) {
		for k, v := range otlptest.SpanBytes(t, tr) {
			if _, dup := got[k]; dup {
				t.Fatalf("span %s received twice", k)
			}
			got[k] = v
		}
	}
	if len(got) != len(want) {
		t.Fatalf("received %d spans, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !bytes.Equal(got[k], w) {
			t.Errorf("span %s differs", k)
		}
	}
}

// TestSendOversizeSpanDefaultReceiver shows why the receiver's limit must be raised: a 5 MiB
// span against a receiver with the default 4 MiB limit fails with ResourceExhausted and is
// reported, not dropped silently.
func TestSendOversizeSpanDefaultReceiver(t *testing.T) {
	srv := otlptest.Start(t, 0)
	snd := newClient(t, srv.Addr, Options{})
	_, err := snd.SendTraces(context.Background(), bigTraces(1, 5<<20))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "export request 1 of 1") {
		t.Fatalf("got %v", err)
	}
}

func TestSendPartialSuccess(t *testing.T) {
	srv := otlptest.Start(t, 0)
	srv.SetReply(func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
		resp := ptraceotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedSpans(2)
		resp.PartialSuccess().SetErrorMessage("2 spans had an empty trace id")
		return resp, nil
	})
	snd := newClient(t, srv.Addr, Options{})
	in := bigTraces(6, 10)
	st, err := snd.SendTraces(context.Background(), in)
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Rejected != 2 || !strings.Contains(err.Error(), "empty trace id") {
		t.Fatalf("got %v", err)
	}
	if st.Spans != in.SpanCount()-2 {
		t.Errorf("accepted spans %d", st.Spans)
	}

	// A partial success that rejects nothing is a warning, not an error.
	srv.SetReply(func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
		resp := ptraceotlp.NewExportResponse()
		resp.PartialSuccess().SetErrorMessage("attribute truncated upstream")
		return resp, nil
	})
	st, err = snd.SendTraces(context.Background(), in)
	if err != nil || len(st.Warnings) != 1 {
		t.Fatalf("warning: %v %+v", err, st)
	}
}

func TestSendRetriesUnavailable(t *testing.T) {
	srv := otlptest.Start(t, 0)
	calls := 0
	srv.SetReply(func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
		calls++
		if calls < 3 {
			return ptraceotlp.NewExportResponse(), status.Error(codes.Unavailable, "memory limiter")
		}
		return ptraceotlp.NewExportResponse(), nil
	})
	snd := newClient(t, srv.Addr, Options{Retries: 3})
	st, err := snd.SendTraces(context.Background(), bigTraces(3, 10))
	if err != nil || calls != 3 || st.Requests != 1 {
		t.Fatalf("err %v calls %d stats %+v", err, calls, st)
	}
}

// TestSplit checks the bound and that order and content survive, on many sizes.
func TestSplit(t *testing.T) {
	var m ptrace.ProtoMarshaler
	in := bigTraces(40, 300000)
	// a second resource with two scopes
	rs := in.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "second")
	for s := 0; s < 2; s++ {
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("scope" + string(rune('a'+s)))
		for i := 0; i < 30; i++ {
			sp := ss.Spans().AppendEmpty()
			sp.SetSpanID([8]byte{byte(s + 1), byte(i)})
			sp.Attributes().PutStr("v", strings.Repeat("y", 1000*i))
		}
	}
	want := otlptest.SpanBytes(t, in)
	total := m.TracesSize(in)
	for _, max := range []int{1, 5000, 50000, 400000, 1 << 20, total - 1, total} {
		parts := Split(in, max)
		got := map[string][]byte{}
		var order []string
		for _, p := range parts {
			if sz := m.TracesSize(p); sz > max && p.SpanCount() != 1 {
				t.Errorf("max %d: part of %d bytes with %d spans", max, sz, p.SpanCount())
			}
			for k, v := range otlptest.SpanBytes(t, p) {
				got[k] = v
			}
			order = append(order, spanOrder(p)...)
		}
		if len(got) != len(want) {
			t.Fatalf("max %d: %d spans, want %d", max, len(got), len(want))
		}
		for k, w := range want {
			if !bytes.Equal(got[k], w) {
				t.Fatalf("max %d: span %s differs", max, k)
			}
		}
		if strings.Join(order, ",") != strings.Join(spanOrder(in), ",") {
			t.Errorf("max %d: span order changed", max)
		}
		if max >= total && len(parts) != 1 {
			t.Errorf("max %d >= size: %d parts", max, len(parts))
		}
	}
}

func spanOrder(td ptrace.Traces) []string {
	var out []string
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			sps := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				out = append(out, sps.At(k).SpanID().String())
			}
		}
	}
	return out
}

func testLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := 0; i < n; i++ {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetEventName("runagain.replay.divergence")
		lr.Body().SetStr(strings.Repeat("d", i+1))
	}
	return ld
}

// TestSendLogs: log records go through the same client as spans, with the same retry rule
// (Unavailable retried, InvalidArgument not) and partial success reported as a RejectedError.
func TestSendLogs(t *testing.T) {
	srv := otlptest.Start(t, 0)
	c := newClient(t, srv.Addr, Options{Retries: 2})
	in := testLogs(3)
	if err := c.ConsumeLogs(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	got := srv.Logs.Received()
	if len(got) != 1 {
		t.Fatalf("%d log requests", len(got))
	}
	var m plog.ProtoMarshaler
	wb, _ := m.MarshalLogs(in)
	gb, _ := m.MarshalLogs(got[0])
	if !bytes.Equal(wb, gb) {
		t.Error("received logs differ from those sent")
	}

	calls := 0
	srv.Logs.SetReply(func(plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
		calls++
		if calls < 3 {
			return plogotlp.NewExportResponse(), status.Error(codes.Unavailable, "memory limiter")
		}
		resp := plogotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedLogRecords(1)
		resp.PartialSuccess().SetErrorMessage("one record too large")
		return resp, nil
	})
	err := c.SendLogs(context.Background(), in)
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Rejected != 1 || calls != 3 || err.Error() != "collector rejected 1 log records: one record too large" {
		t.Fatalf("calls %d, err %v", calls, err)
	}

	calls = 0
	srv.Logs.SetReply(func(plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
		calls++
		return plogotlp.NewExportResponse(), status.Error(codes.InvalidArgument, "bad record")
	})
	err = c.SendLogs(context.Background(), in)
	if status.Code(err) != codes.InvalidArgument || calls != 1 || !strings.Contains(err.Error(), "export request 1 of 1 (3 log records)") {
		t.Fatalf("calls %d, err %v", calls, err)
	}
	if err := c.SendLogs(context.Background(), plog.NewLogs()); err != nil || calls != 1 {
		t.Fatalf("empty logs: %v, %d calls", err, calls)
	}
}

// TestDialEndpoints: the endpoint forms the CLI accepts, and the error quoting a malformed one.
func TestDialEndpoints(t *testing.T) {
	for ep, ok := range map[string]bool{"127.0.0.1:4317": true, "http://localhost:4317/": true, "https://otel.example:443": true,
		"localhost": false, "http://": false, "": false} {
		c, err := Dial(ep, Options{})
		if (err == nil) != ok {
			t.Errorf("Dial(%q): %v", ep, err)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(ep)) {
			t.Errorf("Dial(%q): error does not quote the endpoint: %v", ep, err)
		}
		if c != nil {
			c.Close()
		}
	}
}

// TestSendTracesNotRetried: an error other than Unavailable or ResourceExhausted is returned
// at once.
func TestSendTracesNotRetried(t *testing.T) {
	srv := otlptest.Start(t, 0)
	calls := 0
	srv.SetReply(func(ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
		calls++
		return ptraceotlp.NewExportResponse(), status.Error(codes.PermissionDenied, "no")
	})
	c := newClient(t, srv.Addr, Options{Retries: 3})
	if _, err := c.SendTraces(context.Background(), bigTraces(2, 10)); status.Code(err) != codes.PermissionDenied || calls != 1 {
		t.Fatalf("calls %d, err %v", calls, err)
	}
}

// TestIsLoopback: the test that makes plaintext the CLI's default.
func TestIsLoopback(t *testing.T) {
	for ep, want := range map[string]bool{
		"127.0.0.1:4317": true, "localhost:4317": true, "[::1]:4317": true, "http://127.0.0.2:4317": true,
		"collector.example.com:4317": false, "10.0.0.1:4317": false, "https://otel.example.com:443": false,
	} {
		if got := IsLoopback(ep); got != want {
			t.Errorf("IsLoopback(%q) = %v", ep, got)
		}
	}
}

// TestHeaders: Options.Headers reach the collector as gRPC metadata on trace and log requests
// alike; ParseHeaders reads OTEL_EXPORTER_OTLP_HEADERS syntax and names a malformed entry.
func TestHeaders(t *testing.T) {
	srv := otlptest.Start(t, 0)
	c := newClient(t, srv.Addr, Options{Headers: map[string]string{"authorization": "Bearer t0k", "x-tenant": "a"}})
	if _, err := c.SendTraces(context.Background(), bigTraces(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := c.SendLogs(context.Background(), testLogs(1)); err != nil {
		t.Fatal(err)
	}
	mds := srv.Metadata()
	if len(mds) != 2 {
		t.Fatalf("%d requests", len(mds))
	}
	for i, md := range mds {
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer t0k" || md.Get("x-tenant")[0] != "a" {
			t.Errorf("request %d metadata %v", i, md)
		}
	}

	h, err := ParseHeaders(" Authorization=Bearer%20abc , x-tenant=a%2Cb,,api-key=k=v")
	if err != nil || len(h) != 3 || h["authorization"] != "Bearer abc" || h["x-tenant"] != "a,b" || h["api-key"] != "k=v" {
		t.Errorf("ParseHeaders: %v %v", h, err)
	}
	for _, bad := range []string{"novalue", "=v", "k=%zz"} {
		if _, err := ParseHeaders("a=1," + bad); err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("ParseHeaders(%q): %v", bad, err)
		}
	}
}
