// SPDX-License-Identifier: Apache-2.0

package otlpid

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestParse(t *testing.T) {
	tid, err := ParseTraceID("0102030405060708090A0b0c0d0e0f10")
	if err != nil || tid != (pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) {
		t.Fatalf("ParseTraceID = %v, %v", tid, err)
	}
	sid, err := ParseSpanID("a1a2a3a4a5a6a7a8")
	if err != nil || sid != (pcommon.SpanID{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}) {
		t.Fatalf("ParseSpanID = %v, %v", sid, err)
	}
	for _, bad := range []string{"", "01", "0102030405060708090a0b0c0d0e0f1", "0102030405060708090a0b0c0d0e0f100", "zz02030405060708090a0b0c0d0e0f10"} {
		if _, err := ParseTraceID(bad); err == nil {
			t.Errorf("ParseTraceID(%q): no error", bad)
		}
	}
	for _, bad := range []string{"", "a1a2a3a4a5a6a7a", "a1a2a3a4a5a6a7a8a9", "g1a2a3a4a5a6a7a8"} {
		if _, err := ParseSpanID(bad); err == nil {
			t.Errorf("ParseSpanID(%q): no error", bad)
		}
	}
}
