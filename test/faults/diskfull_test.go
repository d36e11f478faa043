// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
)

// mountTmpfs mounts a tmpfs of size MiB on a new directory, or skips the test saying why.
func mountTmpfs(t *testing.T, mib int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping the full-disk case: mounting a size-limited tmpfs needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", mib), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("skipping the full-disk case: mounting a tmpfs is not allowed here: %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func freeBytes(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// TestDiskFull: the data directory on a 64 MiB tmpfs, filled up by a ballast file while agents
// send: the receiver refuses promptly with a retryable error (gRPC UNAVAILABLE "database or disk
// is full" from the SQLite hot tier, written in the request, with RetryInfo) while the disk is
// full, never holding a request until the client's deadline; nothing acknowledged is lost, and
// once space returns (the ballast removed) requests are acknowledged and stored again.
func TestDiskFull(t *testing.T) {
	collectortest.BinDir(t)
	dir := mountTmpfs(t, 64)
	c := collectortest.Start(t, collectortest.Options{DataDir: dir})
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	cnt := newCounts()
	require.NoError(t, cnt.export(client, agentRequest("disk-first", 5)))

	// leave about 3 MiB free
	ballast := filepath.Join(dir, "ballast")
	f, err := os.Create(ballast)
	require.NoError(t, err)
	chunk := make([]byte, 1<<20)
	for freeBytes(t, dir) > 3<<20 {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())
	t.Logf("ballast written, %d KiB free", freeBytes(t, dir)>>10)

	// send until refused for a while (bounded). A refusal must be prompt: gRPC UNAVAILABLE (or
	// RESOURCE_EXHAUSTED) with RetryInfo from the retry_info processor, answered well within the
	// client's 20 s deadline. DEADLINE_EXCEEDED is the client giving up on a collector that held
	// the request (it was: payload_offload retried each wave of values on the full disk in turn,
	// 25 s for 20 values), so it is counted apart and must not happen.
	var retryable, timedOut, other, withInfo int
	var slowest time.Duration
	deadline := time.Now().Add(40 * time.Second)
	for i := 0; time.Now().Before(deadline) && i < 400 && retryable < 5; i++ {
		start := time.Now()
		err := cnt.export(client, agentRequest(fmt.Sprintf("disk-full-%d", i), 20))
		if err == nil {
			continue
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted:
			retryable++
			slowest = max(slowest, time.Since(start))
			if _, ok := retryInfo(err); ok {
				withInfo++
			}
		case codes.DeadlineExceeded:
			timedOut++
		default:
			other++
			t.Logf("non-retryable refusal: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("while full: %d retryable refusals (%d with RetryInfo, slowest answered in %s), %d client timeouts, %d other",
		retryable, withInfo, slowest.Round(time.Millisecond), timedOut, other)
	assert.Positive(t, retryable, "a full disk is answered with retryable refusals")
	assert.Equal(t, retryable, withInfo, "every refusal tells the client when to retry (RetryInfo)")
	assert.Zero(t, timedOut, "refused promptly, never held until the client's deadline")
	assert.Zero(t, other, "never a non-retryable refusal for a full disk")

	// space returns
	require.NoError(t, os.Remove(ballast))
	recovered := false
	deadline = time.Now().Add(60 * time.Second)
	for i := 0; time.Now().Before(deadline) && !recovered; i++ {
		recovered = cnt.export(client, agentRequest(fmt.Sprintf("disk-back-%d", i), 5)) == nil
		if !recovered {
			time.Sleep(500 * time.Millisecond)
		}
	}
	assert.True(t, recovered, "requests are acknowledged again once space returns")

	missing, rows := waitHot(t, c.DataDir, cnt.acked, 90*time.Second)
	cnt.report(t, rows, missing)
	assert.Zero(t, missing, "every acknowledged span stored")
	if t.Failed() {
		t.Logf("collector output (last lines):\n%s", lastLines(c.Output(), 15))
	}
}
