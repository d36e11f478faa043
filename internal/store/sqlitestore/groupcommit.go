// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"sync"
)

// # Group commit
//
// The hot file has one writer connection, so concurrent WriteTraces calls (the receiver's
// clients, each waiting for its request) took turns, one transaction each. A call now prepares
// its rows outside the connection (facts, protobuf, compression: traceWrite), queues them and
// waits; the first caller to find no transaction running leads: it commits every queued request
// (up to groupMaxSpans spans) in one transaction, wakes their callers, and hands the lead to the
// next queued caller, if any. A caller returns only after the commit that holds its spans (the
// same durability as its own transaction: WAL, synchronous NORMAL), with that transaction's
// error. When a shared transaction fails, each of its requests is committed alone, so a request
// gets the error of its own rows, never another's.

// groupMaxSpans bounds the spans of one shared transaction (a request is never split).
const groupMaxSpans = 4096

type groupCommit struct {
	mu      sync.Mutex
	queue   []*groupWrite
	leading bool
	off     bool // each call commits alone (the benchmarks' baseline)
}

type groupWrite struct {
	ctx context.Context
	w   *traceWrite
	err error
	// wake receives true when the request is committed (or failed: err), false when its caller
	// is to lead the next transaction.
	wake chan bool
}

// write commits w through commit, in a transaction shared with the calls queued meanwhile.
func (g *groupCommit) write(ctx context.Context, w *traceWrite, commit func(context.Context, []*traceWrite) error) error {
	if g.off {
		g.mu.Lock()
		defer g.mu.Unlock()
		return commit(ctx, []*traceWrite{w})
	}
	req := &groupWrite{ctx: ctx, w: w, wake: make(chan bool, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, req)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		if done := <-req.wake; done {
			return req.err
		}
	}
	// Lead: commit the queue's head (this request first), then pass the lead on.
	g.mu.Lock()
	n, spans := 0, 0
	for n < len(g.queue) && (n == 0 || spans+len(g.queue[n].w.spans) <= groupMaxSpans) {
		spans += len(g.queue[n].w.spans)
		n++
	}
	group := append([]*groupWrite(nil), g.queue[:n]...)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()

	var ws []*traceWrite
	var live []*groupWrite
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err // its caller gave up before its rows were written: nothing of it is stored
			continue
		}
		ws = append(ws, r.w)
		live = append(live, r)
	}
	if len(live) > 0 {
		// The shared transaction does not end with one caller's context.
		if err := commit(context.WithoutCancel(ctx), ws); err != nil {
			if len(live) == 1 {
				live[0].err = err
			} else {
				for _, r := range live {
					r.err = commit(r.ctx, []*traceWrite{r.w})
				}
			}
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].wake <- false // the next caller leads
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, r := range group {
		if r != req {
			r.wake <- true
		}
	}
	return req.err
}
