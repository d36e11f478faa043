// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestGroupCommitConcurrentWriters: concurrent WriteTraces calls (some sharing runs, some
// retrying a request already stored) each return once their spans are stored: every span reads
// back byte for byte, and the run index equals the aggregate of the span rows.
func TestGroupCommitConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	var mu sync.Mutex
	want := map[string][]byte{}
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				td := fixtureRuns(fmt.Sprintf("g%d-%d", g%3, i), 20) // writers g and g+3 write the same runs
				mu.Lock()
				for k, v := range spanProtos(t, td) {
					want[k] = v
				}
				mu.Unlock()
				rejected, err := db.WriteTraces(ctx, td)
				assert.NoError(t, err)
				assert.Empty(t, rejected)
				// The spans of this request are stored when the call returns.
				run, err := db.Run(ctx, storetest.TraceID(fmt.Sprintf("g%d-%d-0", g%3, i)).String())
				if assert.NoError(t, err) {
					assert.Equal(t, 5, run.Traces.SpanCount())
				}
			}
		}()
	}
	wg.Wait()
	requireRunsRead(t, db, want)
	rows, err := db.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	agg, err := listRuns(ctx, db.SQL(), store.RunFilter{}, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
	require.NoError(t, err)
	require.Len(t, rows, 3*15*20)
	assert.Equal(t, agg, rows)
	var frames, live int
	require.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*), SUM(spans) FROM span_frames`).Scan(&frames, &live))
	var framed int
	require.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM spans WHERE otlp_codec = 3`).Scan(&framed))
	assert.Equal(t, framed, live, "each frame counts the span rows pointing into it")
	var orphan int
	require.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM span_frames f WHERE NOT EXISTS
	  (SELECT 1 FROM spans s WHERE s.otlp_codec = 3 AND s.otlp_dict = f.id)`).Scan(&orphan))
	assert.Zero(t, orphan, "a frame whose spans were all replaced by a retry is deleted")
}

// TestGroupCommitOwnErrors: calls queued while a transaction runs share the next one; when it
// fails, each request is committed alone and gets its own transaction's error, never another's;
// a caller whose context ended before its turn gets that error and nothing of it is committed.
func TestGroupCommitOwnErrors(t *testing.T) {
	var g groupCommit
	bad := &traceWrite{spans: make([]spanRow, 1)}
	release := make(chan struct{})
	var mu sync.Mutex
	var txs [][]*traceWrite
	commit := func(_ context.Context, ws []*traceWrite) error {
		mu.Lock()
		txs = append(txs, ws)
		first := len(txs) == 1
		mu.Unlock()
		if first {
			<-release // the others queue meanwhile
		}
		for _, w := range ws {
			if w == bad {
				return errors.New("bad request")
			}
		}
		return nil
	}
	first := &traceWrite{spans: make([]spanRow, 1)}
	errs := make(chan error, 8)
	go func() { errs <- g.write(context.Background(), first, commit) }()
	for { // the first call leads and holds its transaction open
		mu.Lock()
		n := len(txs)
		mu.Unlock()
		if n == 1 {
			break
		}
	}
	goods := []*traceWrite{{spans: make([]spanRow, 1)}, {spans: make([]spanRow, 1)}}
	results := map[*traceWrite]chan error{}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	gone := &traceWrite{spans: make([]spanRow, 1)}
	for _, w := range []*traceWrite{goods[0], bad, goods[1], gone} {
		res := make(chan error, 1) // the goroutine sends on res: the map is written only here
		results[w] = res
		ctx := context.Background()
		if w == gone {
			ctx = canceled
		}
		go func() { res <- g.write(ctx, w, commit) }()
	}
	for { // all four queued
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == 4 {
			break
		}
	}
	close(release)
	require.NoError(t, <-errs)
	assert.NoError(t, <-results[goods[0]])
	assert.NoError(t, <-results[goods[1]])
	assert.EqualError(t, <-results[bad], "bad request")
	assert.ErrorIs(t, <-results[gone], context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, txs, 5, "the first alone, the three live queued together, then each alone")
	assert.Len(t, txs[1], 3)
	for _, tx := range txs {
		for _, w := range tx {
			assert.NotSame(t, gone, w, "a request whose caller gave up is not written")
		}
	}
	assert.False(t, g.leading)
	assert.Empty(t, g.queue)
}
