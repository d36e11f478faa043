// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"sync"
	"time"
)

// signQueueMax bounds the runs a signQueue holds: past it, the write that queues one more signs
// the queue itself, so a burst of marked runs slows its writers instead of growing memory.
const signQueueMax = 4096

// signQueue coalesces the runs that committed write transactions marked and did not sign
// (indexPatterns), and signs them (signRuns) once delay has passed since the first of them was
// queued. A run whose spans arrive in several requests (its root last, as SDK batch span
// processors export them) is then read back and signed once per delay instead of once per
// request: the read back was most of the post-commit signing at ingest (BENCHMARKS.md,
// "Signatures at ingest"). A queued run keeps its mark, and readers sign a marked run on the spot
// (patternindex.go), so a listing made meanwhile misses nothing. A delay <= 0 signs each
// write's runs right after its commit, in the writer's goroutine.
type signQueue struct {
	delay time.Duration
	sign  func(ctx context.Context, ids []string)

	mu      sync.Mutex
	pending traceSet
	timer   *time.Timer
	closed  bool
	// running is held while a batch of the queue is signed: one at a time, and close waits for
	// the one in flight before the file is closed.
	running sync.Mutex
}

func newSignQueue(delay time.Duration, sign func(ctx context.Context, ids []string)) *signQueue {
	return &signQueue{delay: delay, sign: sign}
}

// add queues the runs ids a committed write marked.
func (q *signQueue) add(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if q.delay <= 0 {
		q.sign(ctx, ids)
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.signNow(ctx, ids)
		return
	}
	for _, id := range ids {
		q.pending.add(id)
	}
	if len(q.pending.ids) >= signQueueMax {
		ids := q.take()
		q.mu.Unlock()
		q.signNow(ctx, ids)
		return
	}
	if q.timer == nil {
		q.timer = time.AfterFunc(q.delay, q.flush)
	}
	q.mu.Unlock()
}

// take empties the queue and returns what it held; q.mu is held.
func (q *signQueue) take() []string {
	ids := q.pending.ids
	q.pending = traceSet{}
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	return ids
}

// flush signs what the queue holds (the timer's function).
func (q *signQueue) flush() {
	q.mu.Lock()
	ids := q.take()
	q.mu.Unlock()
	q.signNow(context.Background(), ids)
}

func (q *signQueue) signNow(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	q.running.Lock()
	defer q.running.Unlock()
	q.sign(ctx, ids)
}

// close signs what the queue holds and waits for a batch in flight; the runs later writes
// queue are signed in their writers' goroutines. The file may be closed once it returns.
func (q *signQueue) close() {
	q.mu.Lock()
	q.closed = true
	ids := q.take()
	q.mu.Unlock()
	q.signNow(context.Background(), ids)
	q.running.Lock()
	q.running.Unlock() //nolint:staticcheck // SA2001: waits for the batch in flight
}
