// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// counts is what one fault case reports: spans sent, acknowledged, refused (by reason) and
// stored; lost (acknowledged and not stored) must be 0.
type counts struct {
	mu      sync.Mutex
	sent    int
	acked   map[string]bool // trace_id/span_id
	traces  map[string]bool // acknowledged trace ids
	refused map[string]int  // reason -> spans
}

func newCounts() *counts {
	return &counts{acked: map[string]bool{}, traces: map[string]bool{}, refused: map[string]int{}}
}

// export sends td and records the answer.
func (c *counts) export(client ptraceotlp.GRPCClient, td ptrace.Traces) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	c.mu.Lock()
	defer c.mu.Unlock()
	n := td.SpanCount()
	c.sent += n
	if err != nil {
		st := status.Convert(err)
		reason := st.Code().String() + ": " + st.Message()
		if len(reason) > 120 {
			reason = reason[:120] + "..."
		}
		c.refused[reason] += n
		return err
	}
	forEachSpan(td, func(s ptrace.Span) {
		c.acked[s.TraceID().String()+"/"+s.SpanID().String()] = true
		c.traces[s.TraceID().String()] = true
	})
	return nil
}

// exportHTTP sends td over OTLP/HTTP (protobuf) to url (http://host:port/v1/traces) and records
// the answer; it returns the HTTP status code and the Retry-After header (0 and "" when the
// request got no answer).
func (c *counts) exportHTTP(url string, td ptrace.Traces) (int, string) {
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	code, after := 0, ""
	reason := ""
	if err != nil {
		reason = "HTTP: " + err.Error()
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		code, after = resp.StatusCode, resp.Header.Get("Retry-After")
		if code != http.StatusOK {
			reason = fmt.Sprintf("HTTP %d Retry-After %q", code, after)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := td.SpanCount()
	c.sent += n
	if reason != "" {
		if len(reason) > 120 {
			reason = reason[:120] + "..."
		}
		c.refused[reason] += n
		return code, after
	}
	forEachSpan(td, func(s ptrace.Span) {
		c.acked[s.TraceID().String()+"/"+s.SpanID().String()] = true
		c.traces[s.TraceID().String()] = true
	})
	return code, after
}

func (c *counts) report(t *testing.T, stored, lost int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var reasons []string
	total := 0
	for r, n := range c.refused {
		reasons = append(reasons, fmt.Sprintf("%d (%s)", n, r))
		total += n
	}
	sort.Strings(reasons)
	t.Logf("COUNTS %s: sent %d, acknowledged %d, refused %d %v, stored %d, lost %d",
		t.Name(), c.sent, len(c.acked), total, reasons, stored, lost)
}

func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(spans.At(k))
			}
		}
	}
}

// agentRequest is one run of n LLM spans whose input messages (5 KB, over payload_offload's
// 4 KiB threshold) carry a marker naming the span.
func agentRequest(seed string, n int) ptrace.Traces {
	return llmRequest(seed, n, func(k int) string {
		return marker(seed, k) + " " + strings.Repeat("lorem ipsum dolor sit amet ", 200)
	})
}

// llmRequest is one run (trace seed, conversation seed) of n chat spans 1 ms apart; span k's
// input messages hold one user text part, content(k).
func llmRequest(seed string, n int, content func(k int) string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "fault-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	for k := 0; k < n; k++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(storetest.TraceID(seed))
		s.SetSpanID(storetest.SpanID(seed, k))
		s.SetName("chat gpt-4o")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(k) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(k+1) * time.Millisecond)))
		s.Attributes().PutStr("gen_ai.operation.name", "chat")
		s.Attributes().PutStr("gen_ai.conversation.id", seed)
		msgs, _ := json.Marshal([]map[string]any{{"role": "user", "parts": []map[string]any{{"type": "text",
			"content": content(k)}}}})
		s.Attributes().PutStr("gen_ai.input.messages", string(msgs))
	}
	return td
}

func marker(seed string, k int) string { return fmt.Sprintf("marker-%s-%d", seed, k) }

// hotMissing counts acknowledged spans absent from the hot tier (SQLite) of dataDir.
func hotMissing(t *testing.T, dataDir string, acked map[string]bool) (missing, rows int) {
	t.Helper()
	db, err := sqlitestore.Open(filepath.Join(dataDir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	present := map[string]bool{}
	r, err := db.SQL().Query(`SELECT trace_id || '/' || span_id FROM spans`)
	require.NoError(t, err)
	defer r.Close()
	for r.Next() {
		var id string
		require.NoError(t, r.Scan(&id))
		present[id] = true
	}
	for id := range acked {
		if !present[id] {
			missing++
		}
	}
	return missing, len(present)
}

// waitHot polls hotMissing every half second until every acknowledged span is in the hot tier
// or within has passed, and returns the last count (the caller asserts on it).
func waitHot(t *testing.T, dataDir string, acked map[string]bool, within time.Duration) (missing, rows int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing, rows = hotMissing(t, dataDir, acked)
		if missing == 0 || time.Now().After(deadline) {
			return missing, rows
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// retryInfo returns the delay of the google.rpc.RetryInfo detail of a gRPC error.
func retryInfo(err error) (time.Duration, bool) {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}
