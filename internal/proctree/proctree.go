// SPDX-License-Identifier: Apache-2.0

// Package proctree follows the processes a command starts: the command's pid and every
// descendant seen while it runs, read from /proc (github.com/prometheus/procfs) every Interval.
// The proxy uses the set to tell which OpenTelemetry resources (process.pid, process.parent_pid)
// belong to the command it ran (internal/proxy join). A process that starts and exits between
// two reads is missed; its spans can still join by resource attribute or by its parent's pid.
package proctree

import (
	"context"
	"sync"
	"time"
)

// Interval is how often the process table is read.
const Interval = 100 * time.Millisecond

// Tree is the set of pids seen under one root pid.
type Tree struct {
	mu   sync.Mutex
	pids map[int]bool
	stop context.CancelFunc
	done chan struct{}
}

// Watch starts following root's descendants until Stop. root itself is always in the set.
func Watch(root int) *Tree {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tree{pids: map[int]bool{root: true}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(Interval)
		defer tick.Stop()
		for {
			t.scan()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// scan adds every process whose parent is in the set (repeatedly, so a chain seen in one read
// is followed to its end).
func (t *Tree) scan() {
	parents := parentsOf()
	t.mu.Lock()
	defer t.mu.Unlock()
	for grew := true; grew; {
		grew = false
		for pid, ppid := range parents {
			if !t.pids[pid] && t.pids[ppid] {
				t.pids[pid], grew = true, true
			}
		}
	}
}

// Stop ends the watch (after one last read) and returns the pids seen.
func (t *Tree) Stop() map[int]bool {
	t.stop()
	<-t.done
	return t.Pids()
}

// Pids returns a copy of the pids seen so far.
func (t *Tree) Pids() map[int]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int]bool, len(t.pids))
	for p := range t.pids {
		out[p] = true
	}
	return out
}
