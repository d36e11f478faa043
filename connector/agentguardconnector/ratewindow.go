// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"math"
	"time"
)

// rateWindow counts calls and hits (errors, truncated responses) in nBuckets time buckets
// covering one window; buckets leaving the window fold into an exponentially decayed baseline.
// The tool error and context pressure detectors keep one per tool or model.
type rateWindow struct {
	width     int64
	buckets   [nBuckets]bucket
	newest    int64
	baseTotal float64
	baseHits  float64
	halfLife  int64 // ns
	lastFold  int64 // bucket index of the last folded bucket
	lastAlert int64
	recent    []hitRef
}

type bucket struct {
	idx         int64
	total, hits int
}

// hitRef is a span that counted as a hit, with its session and end time (ns).
type hitRef struct {
	spanRef
	session string
	ts      int64
}

const (
	nBuckets  = 10
	maxRecent = 10
)

func newRateWindow(window, halfLife time.Duration) *rateWindow {
	w := int64(window) / nBuckets
	if w <= 0 {
		w = 1
	}
	rw := &rateWindow{width: w, halfLife: max(int64(halfLife), 1), lastFold: -1}
	for i := range rw.buckets {
		rw.buckets[i].idx = -1
	}
	return rw
}

func (w *rateWindow) fold(b *bucket) {
	if b.total > 0 {
		// Exponential decay by the time elapsed since the last fold (half-life halfLife).
		decay := 1.0
		if w.lastFold >= 0 && b.idx > w.lastFold {
			decay = math.Exp2(-float64((b.idx-w.lastFold)*w.width) / float64(w.halfLife))
		}
		w.baseTotal = w.baseTotal*decay + float64(b.total)
		w.baseHits = w.baseHits*decay + float64(b.hits)
		if b.idx > w.lastFold {
			w.lastFold = b.idx
		}
	}
	*b = bucket{idx: -1}
}

// add counts one call at ts (ns) and returns the window totals after it.
func (w *rateWindow) add(ts int64, hit bool) (total, hits int) {
	idx := ts / w.width
	if idx > w.newest {
		w.newest = idx
	}
	for i := range w.buckets {
		if b := &w.buckets[i]; b.idx >= 0 && b.idx <= w.newest-nBuckets {
			w.fold(b)
		}
	}
	if idx <= w.newest-nBuckets {
		// Older than the window: baseline only.
		w.baseTotal++
		if hit {
			w.baseHits++
		}
	} else {
		b := &w.buckets[idx%nBuckets]
		if b.idx != idx {
			w.fold(b)
			b.idx = idx
		}
		b.total++
		if hit {
			b.hits++
		}
	}
	for _, b := range w.buckets {
		if b.idx >= 0 {
			total += b.total
			hits += b.hits
		}
	}
	return total, hits
}

// baseRate is the decayed baseline hit rate, or 0 before minCalls calls left the window.
func (w *rateWindow) baseRate(minCalls int) float64 {
	if w.baseTotal < float64(minCalls) {
		return 0
	}
	return w.baseHits / w.baseTotal
}

// inWindow returns the remembered hits that ended at or after since.
func (w *rateWindow) inWindow(since int64) []hitRef {
	var out []hitRef
	for _, h := range w.recent {
		if h.ts >= since {
			out = append(out, h)
		}
	}
	return out
}

// remember keeps r among the last maxRecent hits.
func (w *rateWindow) remember(r hitRef) {
	if len(w.recent) >= maxRecent {
		copy(w.recent, w.recent[1:])
		w.recent = w.recent[:maxRecent-1]
	}
	w.recent = append(w.recent, r)
}
