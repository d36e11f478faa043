// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/collectortest"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// bigPayloadBytes is the size of each large payload: pseudo-random lowercase letters, which
// zstd leaves at about 59% (log2(26)/8), 17.7 MiB: above the 16 MiB from which gocloud.dev
// v0.47's s3blob (aws-sdk-go-v2 transfermanager: multi-part threshold 16 MiB, parts of 8 MiB)
// uploads an object in several parts, whether it is one payload or a pack of payloads.
const bigPayloadBytes = 30 << 20

// payloadText is span k of seed's message content: the marker, then size pseudo-random
// lowercase letters drawn from the seed (the same text every time it is asked for). Letters
// only: no operator, digit or capital for agent_redaction's detectors to take for a secret
// (random base64 did: "AIza..." read as a Google API key).
func payloadText(seed string, k, size int) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(k)))
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(r.Uint32N(26))
	}
	return marker(seed, k) + " " + string(b)
}

// payloadRequest is one run of n LLM spans, each with its input messages holding
// payloadText(seed, k, size).
func payloadRequest(seed string, n, size int) ptrace.Traces {
	return llmRequest(seed, n, func(k int) string { return payloadText(seed, k, size) })
}

// TestBlobStoreStopsMidWrite: the payloads live on S3 (MinIO). MinIO is killed (SIGKILL: the
// connection cut where it is) while a multi-part upload of an 8 MiB payload is in flight, and
// again while small payloads (single PUTs) are being written, and restarted each time. Every
// acknowledged span is in the hot tier, and every acknowledged payload reads back whole with
// `runagain show` (offloaded, or kept inline when the store failed), byte for byte.
//
// Black-box on purpose: it holds whether payload_offload writes one object per payload or packs
// many payloads into pack files uploaded whole.
func TestBlobStoreStopsMidWrite(t *testing.T) {
	collectortest.BinDir(t)
	mc := miniotest.Start(t)
	cfg := variantAll(t, map[string]string{
		"url: file://${env:RUNAGAIN_DATA_DIR:-./data}/blobs?create_dir=true&metadata=skip": "url: " + mc.URL("payloads/"),
	})
	c := collectortest.Start(t, collectortest.Options{Config: cfg})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	cnt := newCounts()

	var mu sync.Mutex
	sizes := map[string]struct{ n, size int }{} // seed -> spans and payload size, of every request sent
	send := func(seed string, n, size int) error {
		mu.Lock()
		sizes[seed] = struct{ n, size int }{n, size}
		mu.Unlock()
		return cnt.export(client, payloadRequest(seed, n, size))
	}
	small := 6 << 10 // above payload_offload's 4 KiB threshold: one object, one PUT

	// the store up: large and small payloads offloaded
	_ = send("mid-up-big", 1, bigPayloadBytes)
	for i := 0; i < 2; i++ {
		_ = send(fmt.Sprintf("mid-up-small-%d", i), 3, small)
	}

	// killed during a multi-part upload
	var stopSending atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 4 && !stopSending.Load(); i++ {
			_ = send(fmt.Sprintf("mid-multipart-%d", i), 1, bigPayloadBytes)
		}
	}()
	caught := false
	for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
		if mc.MultipartInFlight() {
			caught = true
			break
		}
	}
	mc.Kill()
	t.Logf("MinIO killed %s a multi-part upload", map[bool]string{true: "during", false: "(30 s passed without catching)"}[caught])
	assert.True(t, caught, "a multi-part upload of the 30 MiB payloads was in flight when MinIO was killed")
	time.Sleep(6 * time.Second) // past payload_offload's retry: values kept inline meanwhile
	mc.Restart()
	time.Sleep(2 * time.Second)
	stopSending.Store(true)
	wg.Wait()

	// killed while single PUTs flow
	stopSending.Store(false)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 80 && !stopSending.Load(); i++ {
			_ = send(fmt.Sprintf("mid-single-%d", i), 3, small)
			time.Sleep(100 * time.Millisecond) // spread over the outage; each run is read back below
		}
	}()
	time.Sleep(time.Second)
	mc.Kill()
	time.Sleep(6 * time.Second)
	mc.Restart()
	time.Sleep(2 * time.Second)
	stopSending.Store(true)
	wg.Wait()

	// the store back: offloaded again
	_ = send("mid-back-big", 1, bigPayloadBytes)
	_ = send("mid-back-small", 3, small)

	cnt.mu.Lock()
	acked := cnt.acked
	traces := cnt.traces
	cnt.mu.Unlock()
	require.NotEmpty(t, acked)

	missing, rows := waitHot(t, c.DataDir, acked, 60*time.Second)
	assert.Zero(t, missing, "every acknowledged span is in the hot tier")

	// every acknowledged payload reads back whole (show rehydrates offloaded values)
	seedOfTrace := map[string]string{}
	mu.Lock()
	for seed := range sizes {
		seedOfTrace[storetest.TraceID(seed).String()] = seed
	}
	mu.Unlock()
	unreadable := 0
	for tr := range traces {
		seed := seedOfTrace[tr]
		out, stderr, err := c.CLI("--config", cfg, "show", "--json", tr)
		if err != nil {
			t.Logf("show %s (%s): %v %s", tr, seed, err, lastLines(stderr, 3))
			unreadable++
			continue
		}
		sz := sizes[seed]
		for k := 0; k < sz.n; k++ {
			if !strings.Contains(out, payloadText(seed, k, sz.size)) {
				t.Logf("%s span %d: payload not read back whole", seed, k)
				unreadable++
			}
		}
	}
	assert.Zero(t, unreadable, "every acknowledged payload reads back byte for byte")

	objects := 0
	_ = filepath.WalkDir(filepath.Join(mc.Dir, mc.Bucket, "payloads"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			objects++
		}
		return nil
	})
	t.Logf("payload bucket: %d files in MinIO's data directory", objects)
	assert.Positive(t, objects, "payloads were offloaded to MinIO")
	cnt.report(t, rows, missing)
}
