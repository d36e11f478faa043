// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"time"
)

// liveWindow is how recent a run's last span must be for an incomplete run to count as still
// receiving: its page refreshes every liveRefresh and reads the store again (not the cache).
const (
	liveWindow  = 5 * time.Minute
	liveRefresh = 5 * time.Second
)

// markUnfinished flags the rows of spans that have not ended (no end time, or one before the
// start: what a span still running is exported with): they are drawn up to the run's end,
// hatched, and say "not finished" instead of a duration.
func markUnfinished(c *cachedRun) {
	runEnd := ms(c.end.Sub(c.start))
	for i, n := range c.nodes {
		s := n.Span
		if s.EndTimestamp() == 0 || s.EndTimestamp() < s.StartTimestamp() {
			r := &c.rows[i]
			r.Unfinished = true
			r.Dur = max(0, runEnd-r.Start)
			c.unfinished++
		}
		if n.MissingParent != "" {
			c.rows[i].MissingParent = n.MissingParent
		}
	}
}

// live reports whether the run is incomplete (or has unfinished spans) and its last span is
// recent: it may still be receiving spans.
func (c *cachedRun) live(now time.Time) bool {
	return (c.view.Incomplete || c.unfinished > 0) && now.Sub(c.end) < liveWindow
}
