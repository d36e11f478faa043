// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// countingProxy forwards to MinIO and counts the requests that write (PUT, and POST: multipart
// create/complete) and those that read (GET, HEAD).
type countingProxy struct {
	srv          *httptest.Server
	writes, rest atomic.Int64
}

func newCountingProxy(t *testing.T, endpoint string) *countingProxy {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			p.writes.Add(1)
		} else {
			p.rest.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestS3PutsPer1000Spans counts the blob write requests (PUT and POST, at a counting proxy in
// front of MinIO) for 1,000 LLM-call spans (20 generated agent conversations of 50 turns, every
// call resending its history; 50 spans per ConsumeTraces) in the single-object layout (before
// packs) and in the pack layout (limits 16 MiB, age 1 h so that only the size limit seals: the
// age limit adds at most one PUT per max_age). The pack layout must need at most one write per
// 8 MiB of new (compressed) payload bytes stored (issue 17), and fewer than the single-object layout.
func TestS3PutsPer1000Spans(t *testing.T) {
	mc := miniotest.Start(t)
	proxy := newCountingProxy(t, mc.Endpoint)
	type result struct {
		writes, reads, inline, stored int64
	}
	run := func(layout string) result {
		u := strings.Replace(mc.URL(layout+"/"), url.QueryEscape(mc.Endpoint), url.QueryEscape(proxy.srv.URL), 1)
		cfg := testConfig(u)
		cfg.RetryOnFailure.MaxElapsedTime = 30 * time.Second
		if layout == "packs" {
			cfg.payloads.Dir = t.TempDir()
			cfg.payloads.Pack.MaxAge = time.Hour
		}
		h := newHarness(t, cfg)
		w0, r0 := proxy.writes.Load(), proxy.rest.Load()
		var inline int64
		convs := make([]*conversation, 20)
		sys, tools := fixedPrompt()
		for i := range convs {
			convs[i] = newConversation(uint64(1000 + i))
		}
		for turn := 0; turn < 50; turn++ {
			td := ptrace.NewTraces()
			ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
			for _, c := range convs {
				s := ss.Spans().AppendEmpty()
				s.SetName("chat")
				for k, v := range c.turn(turn, sys, tools) {
					s.Attributes().PutStr(k, v)
					if len(v) >= cfg.MinSize {
						inline += int64(len(v))
					}
				}
			}
			if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
				t.Fatal(err)
			}
		}
		// Shutdown seals the open pack and uploads it.
		h.stop()
		if h.metric("failures") != 0 {
			t.Fatalf("%s: %d values kept inline", layout, h.metric("failures"))
		}
		return result{writes: proxy.writes.Load() - w0, reads: proxy.rest.Load() - r0, inline: inline, stored: h.metric("bytes_stored")}
	}
	single := run("single")
	packs := run("packs")
	for _, x := range []struct {
		name string
		r    result
	}{{"single objects", single}, {"packs", packs}} {
		t.Logf("%-14s 1000 spans: %5d write requests (PUT/POST), %5d other requests; %.1f MiB offloaded, %.2f MiB stored (compressed, new); %.3f MiB offloaded per write",
			x.name, x.r.writes, x.r.reads, float64(x.r.inline)/(1<<20), float64(x.r.stored)/(1<<20), float64(x.r.inline)/(1<<20)/float64(x.r.writes))
	}
	// The stricter reading of "new payload bytes": the compressed bytes actually stored.
	limit := int64(math.Ceil(float64(packs.stored) / (8 << 20)))
	if packs.writes > limit || packs.writes == 0 {
		t.Fatalf("packs: %d write requests for %d new bytes stored, want 1..%d (one per 8 MiB)", packs.writes, packs.stored, limit)
	}
	if single.writes <= 10*packs.writes {
		t.Fatalf("single objects: %d writes, packs %d: the test does not tell the layouts apart", single.writes, packs.writes)
	}
}

// fixedPrompt returns system instructions and tool definitions shared by every conversation.
func fixedPrompt() (system, tools string) {
	c := newConversation(7)
	sys, _ := json.Marshal([]any{map[string]any{"type": "text", "content": c.text(4500, 6000)}})
	var ts []any
	for i := 0; i < 8; i++ {
		ts = append(ts, map[string]any{"type": "function", "name": fmt.Sprintf("tool_%d", i), "description": c.text(200, 500)})
	}
	td, _ := json.Marshal(ts)
	return string(sys), string(td)
}
