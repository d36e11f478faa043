// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// pricedRequest is run seed: one chat span of gpt-4o-mini with inputTokens input tokens (priced
// by genai-prices at $0.15 per million) and filler non-LLM spans, each with 2 KB of random hex
// (below payload_offload's min_size, so only the hot tier writes them): a request large enough
// that the SQLite hot tier needs new pages for it.
func pricedRequest(seed string, inputTokens int64, filler int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "retrying-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	for k := 0; k <= filler; k++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(storetest.TraceID(seed))
		s.SetSpanID(storetest.SpanID(seed, k))
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(k) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(k+1) * time.Millisecond)))
		if k == 0 {
			s.SetName("chat gpt-4o-mini")
			s.Attributes().PutStr("gen_ai.operation.name", "chat")
			s.Attributes().PutStr("gen_ai.provider.name", "openai")
			s.Attributes().PutStr("gen_ai.request.model", "gpt-4o-mini")
			s.Attributes().PutInt("gen_ai.usage.input_tokens", inputTokens)
			s.Attributes().PutInt("gen_ai.usage.output_tokens", 0)
			continue
		}
		s.SetName("step")
		b := make([]byte, 1024)
		_, _ = rand.Read(b)
		s.Attributes().PutStr("filler", hex.EncodeToString(b))
	}
	return td
}

// promSum is the sum of the samples of metric on the collector's Prometheus endpoint (0 while
// it has none).
func promSum(t *testing.T, port int, metric string) float64 {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, metric+"{") && !strings.HasPrefix(l, metric+" ") {
			continue
		}
		rest := l[len(metric):]
		if i := strings.Index(rest, "} "); i >= 0 {
			rest = rest[i+1:]
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// TestRetriedAfterDiskFullCountedOnce: agent_guard sits beside the tiered exporter, whose
// SQLite hot tier is written in the request. With the disk full, the hot write fails and the
// client is refused (retryable) after agent_guard has already counted the request's LLM span;
// the client retries the same request, while the disk is still full and after space returns,
// and runagain.cost counts that span once: $0.15, not once per attempt. A last request (2M
// tokens, $0.30) proves the retries were processed before the total is read.
func TestRetriedAfterDiskFullCountedOnce(t *testing.T) {
	collectortest.BinDir(t)
	dir := mountTmpfs(t, 64)
	promPort := collectortest.FreePort(t)
	c := collectortest.Start(t, collectortest.Options{DataDir: dir, Env: []string{"RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:" + strconv.Itoa(promPort)}})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	export := func(td ptrace.Traces) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		return err
	}
	const cost = 0.15 // 1M input tokens of gpt-4o-mini
	// costNow waits (bounded) until runagain.cost reaches want, and returns it.
	costNow := func(want float64) float64 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			v := promSum(t, promPort, "runagain_cost_USD_total")
			if v >= want-1e-9 || time.Now().After(deadline) {
				return v
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	require.NoError(t, export(pricedRequest("warm-up", 1_000_000, 1)))
	counted := costNow(cost)
	require.InDelta(t, cost, counted, 1e-9, "the warm-up span is counted")

	// fill the disk to the last byte
	ballast := filepath.Join(dir, "ballast")
	f, err := os.Create(ballast)
	require.NoError(t, err)
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for n := 64 << 10; n > 0; n /= 2 { // the last partial chunk
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	require.NoError(t, f.Close())
	t.Logf("ballast written, %d bytes free", freeBytes(t, dir))

	// Send new runs until one is refused after agent_guard counted it (the hot write failed);
	// accepted runs (SQLite reusing its WAL pages) are counted once too.
	var retried ptrace.Traces
	found := false
	for i := 0; i < 60 && !found; i++ {
		td := pricedRequest(fmt.Sprintf("run-%d", i), 1_000_000, 200)
		err := export(td)
		switch {
		case err == nil:
			counted = costNow(counted + cost)
		case status.Code(err) == codes.Unavailable || status.Code(err) == codes.ResourceExhausted:
			if v := costNow(counted + cost); v >= counted+cost-1e-9 {
				t.Logf("run-%d refused after agent_guard counted it: %v", i, err)
				counted, retried, found = v, td, true
			} else {
				t.Logf("run-%d refused before agent_guard: %v", i, err)
				time.Sleep(100 * time.Millisecond)
			}
		default:
			t.Fatalf("run-%d: not a retryable refusal: %v", i, err)
		}
	}
	require.True(t, found, "no request was refused by the hot tier after agent_guard counted it")
	require.InDelta(t, counted, promSum(t, promPort, "runagain_cost_USD_total"), 1e-9)

	// The client retries while the disk is full, then once space returns until acknowledged.
	for i := 0; i < 3; i++ {
		t.Logf("retry while full: %v", export(retried))
	}
	require.NoError(t, os.Remove(ballast))
	acked := false
	for deadline := time.Now().Add(60 * time.Second); !acked && time.Now().Before(deadline); {
		if acked = export(retried) == nil; !acked {
			time.Sleep(500 * time.Millisecond)
		}
	}
	require.True(t, acked, "the retried request is acknowledged once space returns")

	require.NoError(t, export(pricedRequest("marker", 2_000_000, 1)))
	got := costNow(counted + 2*cost)
	assert.InDelta(t, counted+2*cost, got, 1e-9, "each span counted once, whatever the attempts")
	if t.Failed() {
		t.Logf("collector output (last lines):\n%s", lastLines(c.Output(), 15))
	}
}
