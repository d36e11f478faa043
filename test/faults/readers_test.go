// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// TestCLIReadsWhileCollectorWrites: `runagain sessions` and `runagain show` run in a loop while
// two clients write as fast as the collector acknowledges (15 s): every CLI call succeeds, none
// prints "database is locked" (or SQLITE_BUSY), and every acknowledged span is stored.
func TestCLIReadsWhileCollectorWrites(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	cnt := newCounts()
	require.NoError(t, cnt.export(client, agentRequest("readers-first", 5)))
	// the tiers write in batches: wait until the first run is readable before the load starts
	first := storetest.TraceID("readers-first").String()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, _, err := c.CLI("show", first)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the first run never became readable: %v", err)
	}

	stop := time.Now().Add(15 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && i < 2000; i++ {
				_ = cnt.export(client, agentRequest(fmt.Sprintf("readers-%d-%d", w, i), 20))
			}
		}(w)
	}
	var calls, failures atomic.Int64
	var mu sync.Mutex
	var problems []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			args := []string{"sessions", "--json"}
			if i%2 == 1 {
				args = []string{"show", first}
			}
			out, stderr, err := c.CLI(args...)
			calls.Add(1)
			bad := err != nil || strings.Contains(stderr+out, "database is locked") || strings.Contains(stderr+out, "SQLITE_BUSY")
			if bad {
				failures.Add(1)
				mu.Lock()
				if len(problems) < 5 {
					problems = append(problems, fmt.Sprintf("%v: %v: %s", args, err, lastLines(stderr, 2)))
				}
				mu.Unlock()
			}
		}
	}()
	wg.Wait()

	missing, rows := waitHot(t, c.DataDir, cnt.acked, 60*time.Second)
	t.Logf("CLI calls %d, failed %d %v", calls.Load(), failures.Load(), problems)
	cnt.report(t, rows, missing)
	assert.Greater(t, calls.Load(), int64(2), "the CLI ran during the load")
	assert.Zero(t, failures.Load(), "no CLI call failed while the collector wrote: %v", problems)
	assert.Zero(t, missing, "every acknowledged span stored")
}
