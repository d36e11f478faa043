// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/testutil/collectortest"
	"github.com/runagain/runagain/processor/retryinfoprocessor"
)

const overloadLimitMiB = 96

// heapAlloc reads the collector's own otelcol_process_runtime_heap_alloc_bytes (its internal
// telemetry on 127.0.0.1:RUNAGAIN_TELEMETRY_PORT), the quantity memory_limiter bounds.
func heapAlloc(port int) (float64, bool) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "otelcol_process_runtime_heap_alloc_bytes") {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestOverload: memory_limiter at 96 MiB (spike 16 MiB, checked every 100 ms) and six gRPC and
// two HTTP clients sending 1 MB requests as fast as they can for 15 s, more than the pipeline
// sustains: the collector's heap stays bounded near the limiter's limit (at most twice it), every
// refusal is retryable and says when to retry (the retry_info processor: gRPC
// RESOURCE_EXHAUSTED / UNAVAILABLE with RetryInfo; HTTP 429 / 503 with Retry-After), memory
// refusals are RESOURCE_EXHAUSTED / 429, and every acknowledged span is stored. A client's own
// deadline (DEADLINE_EXCEEDED) is counted apart: it is not an answer from the collector.
func TestOverload(t *testing.T) {
	cfg := variantAll(t, map[string]string{
		"    check_interval: 1s\n    limit_percentage: 80\n    spike_limit_percentage: 20": fmt.Sprintf(
			"    check_interval: 100ms\n    limit_mib: %d\n    spike_limit_mib: 16", overloadLimitMiB),
	})
	c := collectortest.Start(t, collectortest.Options{Config: cfg})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	cnt := newCounts()

	stop := time.Now().Add(15 * time.Second)
	var maxHeap float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Now().Before(stop.Add(2 * time.Second)) {
			if v, ok := heapAlloc(c.TelemetryPort); ok && v > maxHeap {
				maxHeap = v
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	byCode := map[string]int{}      // gRPC code or HTTP status of each refusal
	withoutInfo := map[string]int{} // refusals that did not say when to retry
	memoryCode := map[string]int{}  // what the memory_limiter's refusals were answered with
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && i < 1000; i++ {
				err := cnt.export(client, agentRequest(fmt.Sprintf("overload-%d-%d", w, i), 200))
				if err == nil {
					continue
				}
				code := status.Code(err).String()
				mu.Lock()
				byCode[code]++
				if status.Code(err) != codes.DeadlineExceeded {
					if _, ok := retryInfo(err); !ok {
						withoutInfo[code]++
					}
				}
				if strings.Contains(status.Convert(err).Message(), retryinfoprocessor.MemoryRefusedMessage) {
					memoryCode[code]++
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}(w)
	}
	url := "http://" + c.HTTP + "/v1/traces"
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && i < 1000; i++ {
				code, after := cnt.exportHTTP(url, agentRequest(fmt.Sprintf("overload-http-%d-%d", w, i), 200))
				if code == http.StatusOK {
					continue
				}
				key := fmt.Sprintf("HTTP %d", code)
				mu.Lock()
				byCode[key]++
				if secs, err := strconv.Atoi(after); code != 0 && (err != nil || secs < 1) {
					withoutInfo[key]++ // code 0: no answer (the client's own timeout)
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}(w)
	}
	wg.Wait()
	<-done

	missing, rows := waitHot(t, c.DataDir, cnt.acked, 120*time.Second)
	t.Logf("max heap %.0f MiB (limit %d MiB); refusals by code %v; memory refusals answered %v; without retry information %v",
		maxHeap/(1<<20), overloadLimitMiB, byCode, memoryCode, withoutInfo)
	cnt.report(t, rows, missing)
	for code := range byCode {
		assert.Contains(t, []string{codes.Unavailable.String(), codes.ResourceExhausted.String(), codes.DeadlineExceeded.String(),
			"HTTP 429", "HTTP 503", "HTTP 0"}, code, "refusals are retryable")
	}
	assert.Empty(t, withoutInfo, "every refusal says when to retry (RetryInfo, Retry-After)")
	for code := range memoryCode {
		assert.Equal(t, codes.ResourceExhausted.String(), code, "memory_limiter's refusal is RESOURCE_EXHAUSTED")
	}
	assert.NotEmpty(t, memoryCode, "the memory_limiter refused some requests")
	assert.Positive(t, byCode["HTTP 429"], "HTTP clients were told 429 with Retry-After")
	assert.Zero(t, missing, "every acknowledged span stored")
	assert.NotEmpty(t, cnt.acked, "the collector kept acknowledging under overload")
	assert.NotEmpty(t, byCode, "the overload was answered with refusals")
	assert.Positive(t, maxHeap, "heap measured")
	// memory_limiter is a soft bound: it refuses new data above limit-spike and forces a GC above
	// the limit, checking every 100 ms, so the requests in flight between two checks (six
	// clients' 1 MB requests, decoded into pdata several times their wire size) and garbage the
	// collector has not yet reclaimed on a loaded machine overshoot it; seen here up to 1.5x.
	// What must hold is that the heap stays bounded near the limit instead of growing with the
	// overload: at most twice the limit.
	assert.LessOrEqual(t, maxHeap, float64(overloadLimitMiB)*2*(1<<20), "heap bounded near the limiter's limit (at most 2x: in-flight requests between checks)")
}
