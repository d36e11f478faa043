// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestKill9PayloadsInOpenPack: the payloads of acknowledged spans are still in the open pack
// (staged on local disk, fsynced before the acknowledgement; max_age 1 h so it is not sealed)
// when the collector is killed with SIGKILL. While it is down, `runagain show` reads them from
// the staging area; after the restart the staged pack is recovered, uploaded to the bucket
// (data/blobs/packs/) and every payload is readable from there.
func TestKill9PayloadsInOpenPack(t *testing.T) {
	collectortest.BinDir(t)
	cfg := variantAll(t, map[string]string{
		"# pack: {max_size: 16777216, max_age: 60s}": "pack: {max_size: 16777216, max_age: 1h}",
	})
	c := collectortest.Start(t, collectortest.Options{Config: cfg})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	client := ptraceotlp.NewGRPCClient(conn)
	cnt := newCounts()
	for i := 0; i < 8; i++ {
		require.NoError(t, cnt.export(client, agentRequest(fmt.Sprintf("open-pack-%d", i), 5)))
	}
	conn.Close()
	// Wait until the hot tier has every span (the sending queue is persistent too), then kill.
	waitHot(t, c.DataDir, cnt.acked, 30*time.Second)
	packs := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(c.DataDir, dir, "*.pack"))
		return m
	}
	require.Empty(t, packs("blobs/packs"), "the open pack was uploaded before the kill: the test cannot tell")
	require.NotEmpty(t, packs("payloads/staging"), "no staged pack")
	c.Kill()

	showAll := func(phase string) {
		t.Helper()
		for i := 0; i < 8; i++ {
			seed := fmt.Sprintf("open-pack-%d", i)
			out, stderr, err := c.CLI("--config", cfg, "show", "--json", traceOf(seed))
			require.NoError(t, err, "%s: show %s: %s", phase, seed, stderr)
			for k := 0; k < 5; k++ {
				assert.Contains(t, out, marker(seed, k), "%s: payload %d of %s", phase, k, seed)
			}
			raw, _, err := c.CLI("--config", cfg, "show", "--json", "--no-rehydrate", traceOf(seed))
			require.NoError(t, err)
			assert.Contains(t, raw, "/packs/", "%s: %s was not offloaded to a pack", phase, seed)
		}
	}
	showAll("killed, pack staged")

	c.StartAgain()
	deadline := time.Now().Add(30 * time.Second)
	for len(packs("blobs/packs")) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.NotEmpty(t, packs("blobs/packs"), "the recovered pack was not uploaded after the restart")
	c.Stop()
	// The bucket alone: nothing left staged after a clean stop.
	st, _ := os.ReadDir(filepath.Join(c.DataDir, "payloads", "staging"))
	for _, e := range st {
		require.False(t, strings.HasSuffix(e.Name(), ".pack"), "still staged after stop: %s", e.Name())
	}
	showAll("restarted, pack uploaded")
}

func traceOf(seed string) string { return storetest.TraceID(seed).String() }
