// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// mixedRequest is one SDK batch: two valid spans of trace tid and one with an all-zero trace_id
// (named name), as an instrumentation with a broken id generator sends.
func mixedRequest(tid byte, name string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "mixed-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	trace := pcommon.TraceID{0xc0, tid, 1}
	root := ss.Spans().AppendEmpty()
	root.SetName("invoke_agent " + name)
	root.SetTraceID(trace)
	root.SetSpanID(pcommon.SpanID{tid, 1})
	child := ss.Spans().AppendEmpty()
	child.SetName("chat " + name)
	child.SetTraceID(trace)
	child.SetSpanID(pcommon.SpanID{tid, 2})
	child.SetParentSpanID(root.SpanID())
	child.Attributes().PutStr("gen_ai.operation.name", "chat")
	bad := ss.Spans().AppendEmpty()
	bad.SetName(name)
	bad.SetSpanID(pcommon.SpanID{tid, 3})
	return td
}

// validRequest is one valid span of trace tid.
func validRequest(tid byte) ptrace.Traces {
	td := mixedRequest(tid, "unused")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.RemoveIf(func(s ptrace.Span) bool { return s.TraceID().IsEmpty() })
	return td
}

// TestMixedRequestQuarantined: a request holding valid spans and one with an all-zero trace_id,
// sent over OTLP/gRPC, OTLP/HTTP protobuf and OTLP/HTTP JSON to the real collector, is answered
// with OTLP partial success (rejected_spans 1, an error_message naming runagain quarantine); a
// valid request with full success; its valid spans are readable with runagain show, its invalid span is listed by
// runagain quarantine with its reason and counted in
// otelcol_processor_span_quarantine_quarantined_spans_total{reason="zero_trace_id"}.
func TestMixedRequestQuarantined(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	// OTLP partial success (the partial_success extension around core's otlp receiver): the
	// client learns that one of three spans was rejected, and where it is kept.
	checkPartial := func(how string, ps ptraceotlp.ExportPartialSuccess) {
		t.Helper()
		assert.Equal(t, int64(1), ps.RejectedSpans(), "%s: rejected_spans", how)
		assert.Contains(t, ps.ErrorMessage(), "1 of 3 spans not stored as spans", how)
		assert.Contains(t, ps.ErrorMessage(), "runagain quarantine", how)
		t.Logf("%s: partial_success rejected_spans=%d error_message=%q", how, ps.RejectedSpans(), ps.ErrorMessage())
	}
	resp, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(mixedRequest(1, "bad-grpc")))
	require.NoError(t, err, "gRPC: the request is answered with success")
	checkPartial("gRPC", resp.PartialSuccess())
	resp, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(validRequest(9)))
	require.NoError(t, err)
	assert.Equal(t, int64(0), resp.PartialSuccess().RejectedSpans(), "a valid request: full success")

	post := func(td ptrace.Traces, contentType string) {
		var body []byte
		var err error
		if contentType == "application/json" {
			body, err = (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		} else {
			body, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		}
		require.NoError(t, err)
		resp, err := http.Post("http://"+c.HTTP+"/v1/traces", contentType, bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", contentType, b)
		out := ptraceotlp.NewExportResponse()
		if contentType == "application/json" {
			require.NoError(t, out.UnmarshalJSON(b), "%s", b)
		} else {
			require.NoError(t, out.UnmarshalProto(b))
		}
		checkPartial("HTTP "+contentType, out.PartialSuccess())
	}
	post(mixedRequest(2, "bad-http-proto"), "application/x-protobuf")
	post(mixedRequest(3, "bad-http-json"), "application/json")

	// Every valid span is readable.
	for tid := byte(1); tid <= 3; tid++ {
		trace := fmt.Sprintf("c0%02x01%026x", tid, 0)
		deadline := time.Now().Add(20 * time.Second)
		var out string
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(c.DataDir, "hot.db")); err == nil {
				if o, _, err := c.CLI("show", trace); err == nil && strings.Contains(o, "chat ") {
					out = o
					break
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		require.NotEmpty(t, out, "trace %s not readable:\n%s", trace, c.Output())
		assert.Contains(t, out, "invoke_agent ")
	}

	// The invalid ones are quarantined, once each, with their reason.
	var rows []struct {
		R    string          `json:"reason"`
		N    string          `json:"name"`
		S    string          `json:"service"`
		T    string          `json:"trace_id"`
		OTLP json.RawMessage `json:"otlp"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "quarantine", "--json")), &rows))
	names := map[string]string{}
	for _, r := range rows {
		names[r.N] = r.R
		assert.Equal(t, "mixed-agent", r.S)
		assert.Equal(t, strings.Repeat("0", 32), r.T)
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(r.OTLP)
		require.NoError(t, err)
		assert.Equal(t, 1, td.SpanCount(), "the span as received, alone")
	}
	assert.Equal(t, map[string]string{"bad-grpc": "zero_trace_id", "bad-http-proto": "zero_trace_id", "bad-http-json": "zero_trace_id"}, names)
	human := cli(t, c, "quarantine")
	assert.Contains(t, human, "bad-http-json")
	t.Logf("runagain quarantine:\n%s", human)

	// Counted.
	mresp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.TelemetryPort))
	require.NoError(t, err)
	defer mresp.Body.Close()
	metrics, _ := io.ReadAll(mresp.Body)
	var line string
	for _, l := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(l, "otelcol_processor_span_quarantine_quarantined_spans") && strings.Contains(l, `reason="zero_trace_id"`) {
			line = l
		}
	}
	require.NotEmpty(t, line, "no quarantine counter in the collector's metrics")
	assert.True(t, strings.HasSuffix(line, " 3"), "counter: %s", line)
}

// TestImportKeepsValidSpansBesideAnInvalidOne: `runagain import` of an OTLP/JSON file holding two
// valid spans and one with an all-zero trace_id stores the valid run, keeps the invalid span in
// the quarantine, says so, and succeeds (it refused the whole file before: the same data sent by
// an SDK over OTLP was kept).
func TestImportKeepsValidSpansBesideAnInvalidOne(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(mixedRequest(7, "bad-import"))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "mixed.otlp.json")
	require.NoError(t, os.WriteFile(file, body, 0o600))
	out := cli(t, c, "import", file)
	t.Logf("runagain import:\n%s", out)
	assert.Contains(t, out, "1 spans kept in the collector's quarantine, not as runs")
	assert.Contains(t, out, "run c0070100000000000000000000000000 (2 spans)")
	assert.NotContains(t, out, "run 00000000000000000000000000000000")
	assert.Contains(t, cli(t, c, "show", "c0070100000000000000000000000000"), "chat bad-import")
	var rows []struct {
		Reason string `json:"reason"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(rows) == 0 {
		require.NoError(t, json.Unmarshal([]byte(cli(t, c, "quarantine", "--json")), &rows))
		time.Sleep(100 * time.Millisecond)
	}
	require.Len(t, rows, 1, "the invalid span is in the quarantine")
	assert.Equal(t, "zero_trace_id", rows[0].Reason)
}
