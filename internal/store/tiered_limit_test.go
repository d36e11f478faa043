// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

// limited is a per-run tier that honours the filter and records what it was asked.
type limited struct {
	rows  []store.RunSummary // newest first
	asked []store.RunFilter
}

func (l *limited) Runs(_ context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	l.asked = append(l.asked, f)
	var out []store.RunSummary
	for _, r := range l.rows {
		if f.Keep(r) && (f.Limit == 0 || len(out) < f.Limit) {
			out = append(out, r)
		}
	}
	return out, nil
}
func (l *limited) Run(context.Context, string) (*store.Run, error) { return nil, store.ErrNotFound }
func (l *limited) Close() error                                    { return nil }

// sessions is a cold-like tier: rows are sessions, it lists sessions (store.SessionLister).
type sessions struct{ limited }

func (s *sessions) ListsSessions() bool { return true }

// TestTieredPushesTheLimitDown: with a limit, each per-run tier is asked for that many rows and
// the merged answer is the first rows of the unlimited one; the session tier (cold) is read, whole,
// only when the others cannot fill the page; time range and session filters reach every tier.
func TestTieredPushesTheLimitDown(t *testing.T) {
	ctx := context.Background()
	at := func(m int) time.Time { return time.Unix(0, t0).Add(time.Duration(m) * time.Minute).UTC() }
	hot, warm := &limited{}, &limited{}
	for m := 20; m >= 0; m-- {
		r := store.RunSummary{TraceID: fmt.Sprintf("t%02d", m), SessionID: fmt.Sprintf("s%d", m%3), Start: at(m)}
		if m >= 10 { // the hot tier keeps the newest runs; the warm tier keeps them all
			h := r
			h.Tier = "hot"
			hot.rows = append(hot.rows, h)
		}
		r.Tier = "warm"
		warm.rows = append(warm.rows, r)
	}
	cold := &sessions{limited{rows: []store.RunSummary{
		{SessionID: "old", TraceID: "t-old", TraceIDs: []string{"t-old"}, Start: at(-100), Tier: "cold"},
	}}}
	r := store.NewTiered(hot, warm, cold)
	all, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, all, 22)
	require.Len(t, cold.asked, 1, "without a limit every tier is read")

	for _, f := range []store.RunFilter{{Limit: 5}, {Limit: 15}, {Limit: 5, SessionID: "s1"}, {Limit: 3, Since: at(5), Until: at(12)}} {
		hot.asked, warm.asked, cold.asked = nil, nil, nil
		got, err := r.Runs(ctx, f)
		require.NoError(t, err)
		var want []store.RunSummary
		for _, row := range all {
			if f.Keep(row) && len(want) < f.Limit {
				want = append(want, row)
			}
		}
		assert.Equal(t, want, got, "%+v", f)
		assert.Equal(t, f, hot.asked[0], "the hot tier gets the filter and the limit")
		assert.Equal(t, f, warm.asked[0])
		assert.Empty(t, cold.asked, "hot and warm fill the page: the cold tier is not read (%+v)", f)
	}
	// The whole store holds fewer runs than asked: the cold tier is read, whole, and adds its session.
	got, err := r.Runs(ctx, store.RunFilter{Limit: 30})
	require.NoError(t, err)
	assert.Equal(t, all, got)
	require.Len(t, cold.asked, 1)
	assert.Zero(t, cold.asked[0].Limit, "session rows are filtered against earlier tiers: read them all")
	got, err = r.Runs(ctx, store.RunFilter{Limit: 2, SessionID: "old"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "cold", got[0].Tier)
}

// ranking is a per-run tier with a run index (store.RankedRunLister).
type ranking struct{ limited }

func (r *ranking) RankedRuns(ctx context.Context, f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
	rows, err := r.Runs(ctx, store.RunFilter{Since: f.Since, Until: f.Until, SessionID: f.SessionID})
	o.Sort(rows)
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
	}
	return rows, err
}

// TestTieredSkipsSessionsInsideTheRunTiersRange: a range starting at or after the oldest run the
// per-run tiers hold (sessions --since 2h) does not read the session tier, which merges every
// partial it holds; one starting before it does, and lists the session retention removed.
func TestTieredSkipsSessionsInsideTheRunTiersRange(t *testing.T) {
	ctx := context.Background()
	at := func(m int) time.Time { return time.Unix(0, t0).Add(time.Duration(m) * time.Minute).UTC() }
	hot := &ranking{}
	for m := 20; m >= 10; m-- {
		hot.rows = append(hot.rows, store.RunSummary{TraceID: fmt.Sprintf("t%02d", m), SessionID: "s", Start: at(m), Tier: "hot"})
	}
	old := store.RunSummary{SessionID: "old", TraceID: "t-old", TraceIDs: []string{"t-old"}, Start: at(5), Tier: "cold"}
	cold := &sessions{limited{rows: []store.RunSummary{old}}}
	r := store.NewTiered(hot, cold)
	for _, since := range []int{10, 15} {
		cold.asked = nil
		got, err := r.Runs(ctx, store.RunFilter{Since: at(since), Limit: 50})
		require.NoError(t, err)
		assert.Len(t, got, 21-since)
		assert.Empty(t, cold.asked, "since minute %d: the cold tier is not read", since)
	}
	cold.asked = nil
	got, err := r.Runs(ctx, store.RunFilter{Since: at(0), Limit: 50})
	require.NoError(t, err)
	require.Len(t, got, 12)
	assert.Equal(t, old, got[11], "the session retention removed from the hot tier")
	assert.Len(t, cold.asked, 1)
}

// oldestSessions is a session tier that tells its oldest session's start.
type oldestSessions struct{ sessions }

func (o *oldestSessions) OldestStart(context.Context) (time.Time, bool, error) {
	var first time.Time
	for _, r := range o.rows {
		if first.IsZero() || r.Start.Before(first) {
			first = r.Start
		}
	}
	return first, !first.IsZero(), nil
}

// TestTieredSkipsSessionsNewerThanTheRunTiers: a session tier whose sessions all started at or
// after the oldest run of the per-run tiers is read by no listing (it holds nothing they lost
// to retention); one holding an older session is read, and its session listed.
func TestTieredSkipsSessionsNewerThanTheRunTiers(t *testing.T) {
	ctx := context.Background()
	at := func(m int) time.Time { return time.Unix(0, t0).Add(time.Duration(m) * time.Minute).UTC() }
	hot := &ranking{}
	for m := 20; m >= 10; m-- {
		hot.rows = append(hot.rows, store.RunSummary{TraceID: fmt.Sprintf("t%02d", m), SessionID: "s", Start: at(m), Tier: "hot"})
	}
	cold := &oldestSessions{sessions{limited{rows: []store.RunSummary{
		{SessionID: "s", TraceID: "t10", TraceIDs: []string{"t10", "t11"}, Start: at(10), Tier: "cold"}}}}}
	r := store.NewTiered(hot, cold)
	for _, f := range []store.RunFilter{{}, {Limit: 50}, {Limit: 50, ErrorsOnly: true}, {Limit: 5, Until: at(12)}} {
		got, err := r.Runs(ctx, f)
		require.NoError(t, err)
		assert.Len(t, got, map[bool]int{true: 0, false: 11}[f.ErrorsOnly]-map[bool]int{true: 9, false: 0}[!f.Until.IsZero()], "%+v", f)
	}
	_, err := r.RankedRuns(ctx, store.RunFilter{Limit: 50}, store.RunOrder{Key: store.OrderCost})
	require.NoError(t, err)
	assert.Empty(t, cold.asked, "the cold tier is not read")

	old := store.RunSummary{SessionID: "old", TraceID: "t-old", TraceIDs: []string{"t-old"}, Start: at(5), Tier: "cold"}
	cold.rows = append(cold.rows, old)
	got, err := r.Runs(ctx, store.RunFilter{Limit: 50})
	require.NoError(t, err)
	require.Len(t, got, 12)
	assert.Equal(t, old, got[11])
	ranked, err := r.RankedRuns(ctx, store.RunFilter{Limit: 50}, store.RunOrder{Key: store.OrderStart, Asc: true})
	require.NoError(t, err)
	require.NotEmpty(t, ranked)
	assert.Equal(t, old, ranked[0])
}
