// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
)

// recorder is a signQueue's sign function that records each batch it is given.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
}

func (r *recorder) sign(_ context.Context, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(ids))
}

func (r *recorder) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// TestSignQueueCoalesces: runs queued within the delay are signed once, in one batch, after
// it; a run queued twice is signed once; close signs what waits; a full queue is signed by the
// write that fills it; no delay signs each write's runs at once.
func TestSignQueueCoalesces(t *testing.T) {
	ctx := context.Background()
	var r recorder
	q := newSignQueue(50*time.Millisecond, r.sign)
	q.add(ctx, []string{"a", "b"})
	q.add(ctx, []string{"b", "c"})
	assert.Empty(t, r.got(), "nothing is signed before the delay")
	require.Eventually(t, func() bool { return len(r.got()) == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, [][]string{{"a", "b", "c"}}, r.got())

	q.add(ctx, []string{"d"})
	q.close()
	assert.Equal(t, [][]string{{"a", "b", "c"}, {"d"}}, r.got(), "close signs what waits")
	q.add(ctx, []string{"e"})
	assert.Equal(t, []string{"e"}, r.got()[2], "after close, a write signs its own runs")

	var full recorder
	q = newSignQueue(time.Hour, full.sign)
	ids := make([]string, signQueueMax)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	q.add(ctx, ids[:signQueueMax-1])
	assert.Empty(t, full.got())
	q.add(ctx, ids[signQueueMax-1:])
	require.Len(t, full.got(), 1, "the write that fills the queue signs it")
	assert.Len(t, full.got()[0], signQueueMax)
	q.close()

	var now recorder
	q = newSignQueue(0, now.sign)
	q.add(ctx, []string{"x"})
	assert.Equal(t, [][]string{{"x"}}, now.got())
}

// TestSignDelayLeavesNothingUnsigned: with a delay longer than the writes, loadgen traffic
// whose runs straddle requests leaves the runs it marked waiting (marked in the file), the
// listing finds the same patterns as a file signed at each commit (readers sign marked runs),
// and Close signs every one of them as read back.
func TestSignDelayLeavesNothingUnsigned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	late, err := Open(filepath.Join(dir, "late.db"), Options{SignDelay: time.Hour})
	require.NoError(t, err)
	now, err := Open(filepath.Join(dir, "now.db"), Options{})
	require.NoError(t, err)
	defer now.Close()
	for _, td := range benchRequests(40, 5) {
		_, err := late.WriteTraces(ctx, td)
		require.NoError(t, err)
		_, err = now.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	var waiting int
	require.NoError(t, late.db.QueryRow(`SELECT count(*) FROM run_patterns WHERE dirty > 0`).Scan(&waiting))
	require.Positive(t, waiting, "runs straddling requests wait for the delay")
	t.Logf("%d runs waiting", waiting)
	got, err := patterns.List(ctx, late, store.PatternFilter{})
	require.NoError(t, err)
	want, err := patterns.List(ctx, now, store.PatternFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, want.Patterns)
	assert.Equal(t, want.Failing, got.Failing)
	require.Len(t, got.Patterns, len(want.Patterns))
	for i := range want.Patterns {
		assert.Equal(t, want.Patterns[i].ID, got.Patterns[i].ID)
		assert.Equal(t, want.Patterns[i].Runs, got.Patterns[i].Runs)
	}

	require.NoError(t, late.Close())
	late, err = Open(filepath.Join(dir, "late.db"), Options{})
	require.NoError(t, err)
	defer late.Close()
	n := checkStoredAsReadBack(t, late.db, late.Run, late.sessionKeys)
	assert.Equal(t, n, len(runPatternRows(t, now.db, "dirty")), "the same runs fail in both files")
}
