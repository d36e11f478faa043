// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/collectortest"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// TestKill9WithBlobStoreDown: the payloads and the cold tier live on S3 (MinIO). With the store
// stopped, the collector keeps acknowledging (payload_offload keeps values inline, marked; the
// cold tier's persistent queue holds a backlog), is killed with SIGKILL, started again while the
// store is still down, and finally the store comes back: every acknowledged span is in the hot
// tier with its payload readable through `runagain show`, and every acknowledged run reaches
// the cold tier from the queue that survived the crash.
func TestKill9WithBlobStoreDown(t *testing.T) {
	collectortest.BinDir(t)
	mc := miniotest.Start(t)
	cfg := variantAll(t, map[string]string{
		"url: file://${env:RUNAGAIN_DATA_DIR:-./data}/blobs?create_dir=true&metadata=skip": "url: " + mc.URL("payloads/"),
		"url: ${env:RUNAGAIN_DATA_DIR:-./data}/cold":                                       "url: " + mc.URL("cold/"),
	})
	c := collectortest.Start(t, collectortest.Options{Config: cfg})
	dial := func() (*grpc.ClientConn, ptraceotlp.GRPCClient) {
		conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		return conn, ptraceotlp.NewGRPCClient(conn)
	}
	conn, client := dial()
	defer func() { conn.Close() }() // the connection open at the end (it is replaced after the crash)
	cnt := newCounts()
	send := func(phase string, runs int) {
		for i := 0; i < runs; i++ {
			_ = cnt.export(client, agentRequest(fmt.Sprintf("%s-%d", phase, i), 5))
		}
	}

	send("up", 4)   // store up: payloads offloaded to MinIO
	mc.Stop()       // store down
	send("down", 6) // kept inline, cold tier's queue backs up
	c.Kill()        // crash with the backlog on disk
	c.StartAgain()  // store still down
	conn.Close()
	conn, client = dial()
	send("after-crash", 4)
	mc.Restart() // store back
	send("back", 2)

	cnt.mu.Lock()
	acked := cnt.acked
	traces := cnt.traces
	cnt.mu.Unlock()
	require.NotEmpty(t, acked)

	missing, rows := waitHot(t, c.DataDir, acked, 60*time.Second)
	assert.Zero(t, missing, "every acknowledged span is in the hot tier")

	// every payload readable: show rehydrates offloaded values; inline ones are there as sent
	unreadable := 0
	for tr := range traces {
		out, stderr, err := c.CLI("--config", cfg, "show", "--json", tr)
		if err != nil {
			t.Logf("show %s: %v %s", tr, err, stderr)
			unreadable++
			continue
		}
		for k := 0; k < 5; k++ {
			if !strings.Contains(out, marker(seedOf(t, tr, acked), k)) {
				unreadable++
				break
			}
		}
	}
	assert.Zero(t, unreadable, "every acknowledged run shows its payloads")

	// the cold tier's backlog survived the crash and drained once the store came back
	coldMissing := len(traces)
	coldDeadline := time.Now().Add(90 * time.Second)
	for coldMissing > 0 && time.Now().Before(coldDeadline) {
		if cold, err := coldstore.Open(context.Background(), mc.URL("cold/"), coldstore.Options{ReadOnly: true}); err == nil {
			if ss, err := cold.Sessions(context.Background()); err == nil {
				seen := map[string]bool{}
				for _, s := range ss {
					for _, tr := range s.TraceIDs {
						seen[tr] = true
					}
				}
				coldMissing = 0
				for tr := range traces {
					if !seen[tr] {
						coldMissing++
					}
				}
			}
			cold.Close()
		}
		if coldMissing > 0 {
			time.Sleep(time.Second)
		}
	}
	t.Logf("cold tier: %d of %d acknowledged runs missing", coldMissing, len(traces))
	assert.Zero(t, coldMissing, "the cold tier's queue drained after restart and store recovery")
	cnt.report(t, rows, missing)
}

// seeds by trace id, computed from the acknowledged ids' phases
var seedCache sync.Map

func seedOf(t *testing.T, trace string, _ map[string]bool) string {
	t.Helper()
	if s, ok := seedCache.Load(trace); ok {
		return s.(string)
	}
	for _, phase := range []string{"up", "down", "after-crash", "back"} {
		for i := 0; i < 50; i++ {
			seed := fmt.Sprintf("%s-%d", phase, i)
			if storetest.TraceID(seed).String() == trace {
				seedCache.Store(trace, seed)
				return seed
			}
		}
	}
	t.Fatalf("no seed for trace %s", trace)
	return ""
}

// variantAll writes config/default.yaml with each old string replaced (each must occur).
func variantAll(t *testing.T, repl map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	require.NoError(t, err)
	s := string(b)
	for old, new := range repl {
		require.Contains(t, s, old)
		s = strings.Replace(s, old, new, 1)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
	return p
}
