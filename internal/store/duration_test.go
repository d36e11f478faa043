// SPDX-License-Identifier: Apache-2.0

package store

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestSpanDuration: sane times give end minus start; each kind of broken time gives 0 and says
// which.
func TestSpanDuration(t *testing.T) {
	for _, c := range []struct {
		start, end pcommon.Timestamp
		d          time.Duration
		note       string
	}{
		{10, 25, 15, ""},
		{10, 0, 0, DurationUnfinished},
		{25, 10, 0, DurationClockSkew},
		{0, 0, 0, DurationNoTimes},
		{0, 5, 5, ""},
	} {
		if d, note := SpanDuration(c.start, c.end); d != c.d || note != c.note {
			t.Errorf("SpanDuration(%d, %d) = %v %q, want %v %q", c.start, c.end, d, note, c.d, c.note)
		}
	}
}
