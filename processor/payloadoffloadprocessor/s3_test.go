// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// TestS3CorpusRoundTrip is the corpus round trip against a real MinIO server.
func TestS3CorpusRoundTrip(t *testing.T) {
	srv := miniotest.Start(t)
	corpusRoundTrip(t, srv.URL("payloads/"), func(string) bool { return true })
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String("payloads/sha256/"), MaxKeys: aws.Int32(10)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) == 0 {
		t.Fatal("no objects under payloads/sha256/ in MinIO")
	}
}

// TestS3Outage sends spans continuously while MinIO is stopped and restarted (same port, same
// data), under both on_failure modes, and checks that nothing is lost: in keep_inline every span
// reaches the next consumer with its value either inline (and marked) or offloaded; in reject a
// refused batch is retried by the sender (as an OTLP client or queue would) until accepted. In
// both, offload resumes after the restart: the last batches are all offloaded.
func TestS3Outage(t *testing.T) {
	for _, mode := range []OnFailure{OnFailureKeepInline, OnFailureReject} {
		t.Run(string(mode), func(t *testing.T) { outage(t, mode) })
	}
}

func outage(t *testing.T, mode OnFailure) {
	srv := miniotest.Start(t)
	cfg := testConfig(srv.URL(""))
	cfg.OnFailure = mode
	// gocloud's s3blob retries inside each attempt (AWS SDK standard retryer: 3 attempts with
	// backoff); storage.timeout bounds that.
	cfg.Storage.Timeout = 1 * time.Second
	cfg.RetryOnFailure.MaxElapsedTime = 500 * time.Millisecond
	cfg.Storage.Cooldown = 200 * time.Millisecond
	h := newHarness(t, cfg)
	ctx := context.Background()

	const batches, spansPerBatch = 60, 5
	history := bigMessages(6, 900) // shared by every span: its messages dedup across batches
	value := func(b, s int) string {
		return history[:len(history)-2] + fmt.Sprintf(`,{"role":"user","parts":[{"type":"text","content":"batch %d span %d %s"}]}]`, b, s, strings.Repeat("q", 800))
	}
	makeBatch := func(b int) ptrace.Traces {
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for s := 0; s < spansPerBatch; s++ {
			sp := spans.AppendEmpty()
			sp.SetName(fmt.Sprintf("%d/%d", b, s))
			sp.Attributes().PutStr("gen_ai.input.messages", value(b, s))
		}
		return td
	}

	var sent atomic.Int64 // batches accepted
	var refused atomic.Int64
	done := make(chan error, 1)
	restarted := make(chan struct{}) // the last 10 batches are sent after the outage has ended
	go func() {
		for b := 0; b < batches; b++ {
			if b == batches-10 {
				<-restarted
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				td := makeBatch(b)
				err := h.traces.ConsumeTraces(ctx, td)
				if err == nil {
					break
				}
				if mode != OnFailureReject {
					done <- fmt.Errorf("batch %d: keep_inline returned %w", b, err)
					return
				}
				refused.Add(1)
				if time.Now().After(deadline) {
					done <- fmt.Errorf("batch %d refused for 60 s: %w", b, err)
					return
				}
				time.Sleep(200 * time.Millisecond) // the client's retry backoff
			}
			sent.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
		done <- nil
	}()
	waitFor := func(n int64) {
		for sent.Load() < n {
			select {
			case err := <-done:
				t.Fatalf("sender stopped early: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFor(15)
	srv.Stop()
	outageStart := time.Now()
	// Keep MinIO down for 3 s or until the sender saw it (keep_inline: batches flow on).
	time.Sleep(3 * time.Second)
	srv.Restart()
	// A value in flight across the restart may still fail (one storage.timeout), and its batch
	// starts a cooldown: the last batches go once both have passed.
	time.Sleep(cfg.Storage.Timeout + cfg.Storage.Cooldown)
	close(restarted)
	t.Logf("%s: MinIO down for %v; %d batches accepted before restart, %d refusals", mode, time.Since(outageStart).Round(time.Millisecond), sent.Load(), refused.Load())
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Nothing lost: every span of every batch is there once, and its value comes back.
	got := map[string]bool{}
	inline, offloaded := 0, 0
	lastOffloaded := 0
	for _, td := range h.tsink.AllTraces() {
		spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := 0; i < spans.Len(); i++ {
			sp := spans.At(i)
			var b, s int
			if _, err := fmt.Sscanf(sp.Name(), "%d/%d", &b, &s); err != nil {
				t.Fatal(err)
			}
			if got[sp.Name()] {
				t.Fatalf("span %s delivered twice", sp.Name())
			}
			got[sp.Name()] = true
			a := sp.Attributes()
			if v, ok := a.Get("gen_ai.input.messages"); ok {
				if v.Str() != value(b, s) {
					t.Fatalf("span %s: inline value changed", sp.Name())
				}
				if m, ok := a.Get(FailedKeysAttr); !ok || m.Slice().At(0).Str() != "gen_ai.input.messages" {
					t.Fatalf("span %s kept inline without the failure mark", sp.Name())
				}
				inline++
				continue
			}
			ref, ok := a.Get("gen_ai.input.messages_ref")
			if !ok {
				t.Fatalf("span %s lost its value", sp.Name())
			}
			data, err := h.res.Fetch(ctx, ref.Str())
			if err != nil || string(data) != value(b, s) {
				t.Fatalf("span %s: fetch %s: %v (equal=%v)", sp.Name(), ref.Str(), err, string(data) == value(b, s))
			}
			offloaded++
			if b >= batches-10 {
				lastOffloaded++
			}
		}
	}
	if len(got) != batches*spansPerBatch {
		t.Fatalf("%d spans delivered, want %d", len(got), batches*spansPerBatch)
	}
	t.Logf("%s: %d spans offloaded, %d kept inline, %d refusals; failures counter %d", mode, offloaded, inline, refused.Load(), h.metric("failures"))
	switch mode {
	case OnFailureKeepInline:
		if inline == 0 || h.metric("failures") != int64(inline) {
			t.Fatalf("keep_inline: %d inline spans, failures counter %d: the outage was not seen or not counted", inline, h.metric("failures"))
		}
	case OnFailureReject:
		if inline != 0 || refused.Load() == 0 {
			t.Fatalf("reject: %d inline spans, %d refusals", inline, refused.Load())
		}
	}
	if lastOffloaded != 10*spansPerBatch {
		t.Fatalf("offload did not resume: %d of the last %d spans offloaded", lastOffloaded, 10*spansPerBatch)
	}
}
