// SPDX-License-Identifier: Apache-2.0

package coldstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestListingsReadEachObjectOnce: a reader lists the cold tier again (each page of EachRun, each
// UI request) without reading the objects it has read (objectCache), and still sees what
// changed: a new object, an object rewritten by a retry with other rows, an expired one. Its
// answers equal those of a reader opened afresh.
func TestListingsReadEachObjectOnce(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer w.Close()
	r, err := Open(ctx, dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	fresh := func() []store.Session {
		t.Helper()
		f, err := Open(ctx, dir, Options{ReadOnly: true})
		require.NoError(t, err)
		defer f.Close()
		ss, err := f.Sessions(ctx)
		require.NoError(t, err)
		return ss
	}
	sessions := func() []store.Session {
		t.Helper()
		ss, err := r.Sessions(ctx)
		require.NoError(t, err)
		return ss
	}

	_, err = w.Write(ctx, store.Partials(storetest.Traces(runA, runC), storetest.Alert(runA, "loop"), nil, 0, nil))
	require.NoError(t, err) // two objects: runA's day and runC's
	first := sessions()
	assert.EqualValues(t, 2, r.cache.decoded.Load())
	assert.Equal(t, first, sessions(), "the same listing again")
	assert.EqualValues(t, 2, r.cache.decoded.Load(), "nothing read again")

	now = now.Add(time.Hour)
	_, err = w.Write(ctx, store.Partials(storetest.Traces(runB), plog.Logs{}, nil, 0, nil))
	require.NoError(t, err)
	got := sessions()
	assert.EqualValues(t, 3, r.cache.decoded.Load(), "only the new object is read")
	assert.Equal(t, fresh(), got)
	assert.NotEqual(t, first, got)

	// A batch rewritten with other rows (runA's trace with one more LLM call) is read again.
	more := runA
	more.LLMCalls = 3
	ps := store.Partials(storetest.Traces(more, runC), storetest.Alert(runA, "loop"), nil, 0, nil)
	for i := range ps {
		ps[i].BatchID = "rewritten" // one key for both writes, as a retried batch has
	}
	keys, err := w.Write(ctx, ps)
	require.NoError(t, err)
	before := r.cache.decoded.Load()
	assert.Equal(t, fresh(), sessions())
	assert.EqualValues(t, before+int64(len(keys)), r.cache.decoded.Load())
	ps[0].InputTokens += 1000
	_, err = w.Write(ctx, ps)
	require.NoError(t, err)
	assert.Equal(t, fresh(), sessions(), "a rewritten object is read again")

	// Expired objects leave the listing, and the answer.
	now = now.Add(48 * time.Hour)
	n, err := w.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	require.Positive(t, n)
	assert.Equal(t, fresh(), sessions())
}

// TestOldestStartReadsTheOldestPartition: OldestStart is the start of the earliest session (as
// Sessions merges them) and reads the objects of the oldest date partition only.
func TestOldestStartReadsTheOldestPartition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	require.NoError(t, err)
	defer w.Close()
	r, err := Open(ctx, dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	_, ok, err := r.OldestStart(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "an empty bucket")

	_, err = w.Write(ctx, store.Partials(storetest.Traces(runA, runB, runC), plog.Logs{}, nil, 0, nil))
	require.NoError(t, err)
	keys, err := w.Keys(ctx)
	require.NoError(t, err)
	require.Greater(t, len(keys), 1, "the runs are on more than one day")
	days := map[string]bool{}
	for _, k := range keys {
		d, _, _ := strings.Cut(k, "/")
		days[d] = true
	}
	require.Greater(t, len(days), 1)

	_, ok, err = r.OldestStart(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "the last answer, given again for oldestFor")
	r.oldest = oldestAnswer{} // as oldestFor later
	oldest, ok, err := r.OldestStart(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 1, r.cache.decoded.Load(), "one object read: the oldest day's")
	ss, err := r.Sessions(ctx)
	require.NoError(t, err)
	want := ss[0].FirstSeen
	for _, s := range ss {
		want = min(want, s.FirstSeen)
	}
	assert.Equal(t, time.Unix(0, want).UTC(), oldest)
}
