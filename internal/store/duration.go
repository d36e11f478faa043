// SPDX-License-Identifier: Apache-2.0

package store

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Reasons a span's duration is clamped to zero (SpanDuration).
const (
	DurationUnfinished = "unfinished" // end time 0: the span was never ended (process died, SDK flushed early)
	DurationClockSkew  = "clock skew" // end before start: the clocks that stamped them disagree
	DurationNoTimes    = "no times"   // start and end 0: the exporter recorded neither
)

// SpanDuration returns end minus start, clamped to zero, and why it was clamped
// (DurationUnfinished, DurationClockSkew, DurationNoTimes, or "" when the times are sane). Views, summaries and
// metrics use it so a span ended at 0 never shows as -2562047h.
func SpanDuration(start, end pcommon.Timestamp) (time.Duration, string) {
	switch {
	case end == 0 && start == 0:
		return 0, DurationNoTimes
	case end == 0 && start != 0:
		return 0, DurationUnfinished
	case end < start:
		return 0, DurationClockSkew
	}
	return time.Duration(end - start), ""
}

// SaneEnd returns end, or start when end is 0 or before start (see SpanDuration): the end to use
// when a run's extent is computed from its spans.
func SaneEnd(start, end pcommon.Timestamp) pcommon.Timestamp {
	if end < start {
		return start
	}
	return end
}
