// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// waitCold waits until the cold tier's Parquet files hold sessions sessions.
func waitCold(t *testing.T, dataDir string, sessions int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := coldstore.Open(context.Background(), filepath.Join(dataDir, "cold"), coldstore.Options{ReadOnly: true}); err == nil {
			ss, err := st.Sessions(context.Background())
			st.Close()
			if err == nil && len(ss) >= sessions {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the cold tier did not get %d sessions in 60 s", sessions)
}

// warmUpDictionaries sends 5 runs of 220 small chat spans (more than the hot writer samples
// before training its zstd dictionary) and waits until the hot tier holds them.
func warmUpDictionaries(t *testing.T, c *collectortest.Collector) {
	t.Helper()
	for r := 0; r < 5; r++ {
		b := newRun(byte(r), "warmup-svc")
		b.trace[8] = 0xd1 // apart from the runs below and the concurrent agent's
		for i := 1; i <= 220; i++ {
			attrs := chatAttrs(10+i, 5, "stop")
			attrs["gen_ai.conversation.id"] = "conv-warmup"
			b.span(byte(i), 0, "chat gpt-4o-mini", i, 5, attrs)
		}
		sendOTLP(t, c, b.td, b.ld)
		waitShow(t, c, b.id(), 220, 0)
	}
}

// plantedRun is one run of a session with unique values in a payload large enough to be
// offloaded (split into objects by message) and in small attributes that stay on the span.
type plantedRun struct {
	b                    *runBuilder
	small, agent, inPay  string
	logPay, sharedPrompt string
}

func newPlantedRun(trace byte, session, tag, sharedPrompt string) plantedRun {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	u := hex.EncodeToString(rnd[:])
	r := plantedRun{b: newRun(trace, "erase-svc"), small: "small-" + tag + "-" + u, agent: "agent-" + tag + "-" + u,
		inPay: "payload-" + tag + "-" + u, logPay: "logbody-" + tag + "-" + u, sharedPrompt: sharedPrompt}
	msgs := []any{
		map[string]any{"role": "system", "parts": []any{map[string]any{"type": "text", "content": sharedPrompt}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text",
			"content": "My account number is " + r.inPay + ". " + strings.Repeat("Please look at my order history in detail. ", 120)}}},
	}
	in, _ := json.Marshal(msgs)
	root := r.b.span(1, 0, "invoke_agent support", 0, 900, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": r.agent, "gen_ai.conversation.id": session,
		"app.customer.note": r.small})
	_ = root
	attrs := chatAttrs(1200, 80, "stop")
	attrs["gen_ai.input.messages"] = string(in)
	attrs["gen_ai.conversation.id"] = session
	r.b.span(2, 1, "chat gpt-4o-mini", 100, 500, attrs)
	r.b.log(2, 150, "gen_ai.user.message", map[string]any{"content": r.logPay + " " + strings.Repeat("the same question again, with more detail. ", 120)})
	return r
}

func (r plantedRun) values() []string { return []string{r.small, r.agent, r.inPay, r.logPay} }

// TestDeleteSessionLeavesNoTrace: the real collector stores two sessions (values planted in
// offloaded payloads, a log body and small attributes; both share a long system prompt). While
// it runs and a third session's agent keeps sending (all of whose runs are stored),
// runagain delete --session erases the first: afterwards no file of the data directory
// (SQLite files and WAL, Parquet, payload objects, queues; raw and zstd-decoded) holds any of
// its values, while the other session is whole and readable with runagain show, its payloads
// (the shared prompt included) rehydrated.
func TestDeleteSessionLeavesNoTrace(t *testing.T) {
	dataDir := t.TempDir()
	c := collectortest.Start(t, collectortest.Options{DataDir: dataDir})
	// More spans than a writer samples before it trains its zstd dictionary: the planted rows
	// below are compressed with it, as on any collector that has run for a while.
	warmUpDictionaries(t, c)
	prompt := "You are the support agent of a shop. " + strings.Repeat("Be precise, be polite, never guess an order status. ", 40)
	a1 := newPlantedRun(0xe1, "conv-erase-me", "a1", prompt)
	a2 := newPlantedRun(0xe2, "conv-erase-me", "a2", prompt)
	b := newPlantedRun(0xe3, "conv-keep-me", "b", prompt)
	for _, r := range []plantedRun{a1, a2, b} {
		sendOTLP(t, c, r.b.td, r.b.ld)
	}
	for _, r := range []plantedRun{a1, a2, b} {
		waitShow(t, c, r.b.id(), 2, 1)
	}
	waitCold(t, dataDir, 2) // the cold queue flushes every 10 s: erase what is stored, not in flight
	var erased, kept []string
	erased = append(append(erased, a1.values()...), a2.values()...)
	erased = append(erased, "conv-erase-me")
	kept = b.values()

	// the scanner finds what is there: every planted value is stored before the erasure, the
	// payload ones offloaded (in zstd blocks of an uploaded pack, or raw in the open pack)
	hits, _, dicts := scanDir(t, dataDir, append(append([]string(nil), erased...), kept...))
	assert.Positive(t, dicts, "the hot tier compresses rows with a trained dictionary")
	for _, v := range append(append([]string(nil), erased...), kept...) {
		assert.NotEmpty(t, hits[v], "%q not found before the erasure: the scan would prove nothing", v)
	}
	for _, v := range []string{a1.small, a1.agent, b.small} {
		// small attributes stay on the span, in the hot tier's dictionary-compressed rows
		assert.Contains(t, hits[v], "hot.db", "%q: the scan reads the hot tier's rows", v)
	}
	for _, f := range hits[a1.inPay] {
		// in an uploaded pack (blobs/), or still in the collector's open pack (payloads/staging/)
		assert.Regexp(t, `^(blobs|payloads)/`, f, "payload stored offloaded, not inline")
	}

	plan := cli(t, c, "delete", "--session", "conv-erase-me", "--dry-run")
	assert.Contains(t, plan, "2 runs would be erased")
	assert.Contains(t, cli(t, c, "show", "--no-rehydrate", a1.b.id()), a1.small, "a dry run removes nothing")

	// An agent of another session keeps sending while delete runs: nothing it sends is refused
	// for good (a write that meets the erasure's lock is retried, as an OTLP exporter does) and
	// every one of its runs is stored.
	stop := make(chan struct{})
	sent := make(chan []string, 1)
	go func() {
		var ids []string
		defer func() { sent <- ids }()
		conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return
		}
		defer conn.Close()
		client := ptraceotlp.NewGRPCClient(conn)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := newRun(byte(0x10+i%200), "concurrent-svc")
			r.trace[9] = byte(i >> 8)
			r.span(1, 0, "invoke_agent busy", 0, 50, map[string]any{"gen_ai.conversation.id": "conv-concurrent"})
			for attempt := 0; attempt < 50; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err = client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(r.td))
				cancel()
				if err == nil {
					ids = append(ids, r.id())
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	out := cli(t, c, "--config", c.Config, "delete", "--session", "conv-erase-me") // the collector's own configuration
	close(stop)
	concurrent := <-sent
	require.NotEmpty(t, concurrent)
	t.Logf("%d runs of another session sent while delete ran", len(concurrent))
	for _, id := range concurrent {
		waitShow(t, c, id, 1, 0)
	}
	t.Logf("runagain delete --session:\n%s", out)
	assert.Contains(t, out, "2 runs")
	assert.Contains(t, out, a1.b.id())
	assert.Contains(t, out, a2.b.id())
	assert.Regexp(t, `hot .*hot\.db: removed .*spans 4`, out)
	assert.Regexp(t, `warm .*warm\.db: removed .*span_summaries 4`, out)
	assert.Regexp(t, `cold .*cold: removed .*session_partials [1-9]`, out)
	assert.Regexp(t, `payloads .*: removed [1-9][0-9]* objects`, out)
	assert.Regexp(t, `[1-9][0-9]* rewritten`, out, "the pack holding both sessions' objects is rewritten without the erased ones")
	assert.Contains(t, out, "kept 1 objects other live runs reference too", "the shared system prompt")

	_, errOut, err := c.CLI("show", a1.b.id())
	assert.Error(t, err, "the erased run is gone")
	assert.Contains(t, errOut, "no run with trace id")

	// Restart (the queues' files are compacted at start: config/default.yaml), stop so every
	// file is at rest, then scan.
	c.Restart()
	c.Stop()
	hits, files, _ := scanDir(t, dataDir, append(append([]string(nil), erased...), kept...))
	for _, v := range erased {
		assert.Empty(t, hits[v], "%q of the erased session still in %v", v, hits[v])
	}
	assert.Greater(t, files, 5)
	for _, v := range kept {
		assert.NotEmpty(t, hits[v], "%q of the other session is gone", v)
	}
	show := cli(t, c, "show", "--json", b.b.id())
	for _, v := range []string{b.small, b.agent, b.inPay, b.logPay, "never guess an order status"} {
		assert.Contains(t, show, v, "the kept session reads whole, payloads rehydrated")
	}
	sess := cli(t, c, "sessions")
	assert.Contains(t, sess, "conv-keep-me")
	assert.NotContains(t, sess, "conv-erase-me")
}
