// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// TestColdOutageDoesNotBlockHotAndWarm stops the cold tier's object store (a real MinIO), sends
// runs, checks that hot and warm stored all of them while cold could not, starts MinIO again
// and waits until the cold tier has caught up with every session, nothing missing.
func TestColdOutageDoesNotBlockHotAndWarm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO")
	}
	ctx := context.Background()
	minio := miniotest.Start(t)
	dir := t.TempDir()
	raw := embedded()
	cold := raw["cold"].(map[string]any)
	cold["sending_queue"] = map[string]any{"enabled": true, "queue_size": 1000, "num_consumers": 2}
	cold["retry_on_failure"] = map[string]any{"initial_interval": "200ms", "max_interval": "1s", "max_elapsed_time": "0s"}
	cold["timeout"] = "3s"
	p, _ := startTiered(t, nil, dir, minio.URL("cold/"), raw)
	stopped := false
	defer func() {
		if !stopped {
			p.stop(t)
		}
	}()

	minio.Stop()
	const runs = 12
	var want []storetest.Run
	for i := 0; i < runs; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("iso-%d", i), Session: fmt.Sprintf("conv-%d", i%4), Service: "svc", Agent: "a",
			Model: "gpt-4.1", Start: time.Date(2026, 11, 1, 0, i, 0, 0, time.UTC).UnixNano(), LLMCalls: 1 + i%3, ToolFail: i%5 == 0}
		want = append(want, r)
		require.NoError(t, p.traces.ConsumeTraces(ctx, storetest.Traces(r)), "accepted while the cold store is down")
	}
	require.NoError(t, p.logs.ConsumeLogs(ctx, storetest.Alert(want[0], "loop")))
	wantSpans := 0
	for _, r := range want {
		wantSpans += r.Spans()
	}

	// Hot and warm have written everything already (their queues are off: ConsumeTraces returned
	// after the write).
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer hot.Close()
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer warm.Close()
	for name, r := range map[string]store.Reader{"hot": hot, "warm": warm} {
		rows, err := r.Runs(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Len(t, rows, runs, name)
		n := int64(0)
		for _, row := range rows {
			n += row.Spans
		}
		assert.EqualValues(t, wantSpans, n, name)
	}

	// Nothing reached the object store meanwhile (MinIO keeps objects as directories on disk).
	objs, err := filepath.Glob(filepath.Join(minio.Dir, minio.Bucket, "cold", "*"))
	require.NoError(t, err)
	assert.Empty(t, objs)

	minio.Restart()
	st, err := coldstore.Open(ctx, minio.URL("cold/"), coldstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	var sessions []store.Session
	deadline := time.Now().Add(90 * time.Second)
	for {
		sessions, err = st.Sessions(ctx)
		if err == nil {
			total, alerts := int64(0), int64(0)
			for _, s := range sessions {
				total += s.Spans
				alerts += s.Alerts
			}
			// The alert travels in the logs pipeline's own cold queue: wait for it too (stopping
			// while its retry waits would drop it from the in-memory queue).
			if total >= int64(wantSpans) && alerts >= 1 {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "cold tier did not catch up in 90 s: %v, %d sessions", err, len(sessions))
		time.Sleep(300 * time.Millisecond)
	}
	p.stop(t)
	stopped = true
	sessions, err = st.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, sessions, 4)
	var spans, alerts int64
	traces := map[string]bool{}
	for _, s := range sessions {
		spans += s.Spans
		alerts += s.Alerts
		for _, id := range s.TraceIDs {
			traces[id] = true
		}
	}
	assert.EqualValues(t, wantSpans, spans, "nothing missing, nothing counted twice")
	assert.EqualValues(t, 1, alerts)
	for _, r := range want {
		assert.True(t, traces[storetest.TraceID(r.Seed).String()], r.Seed)
	}
}
