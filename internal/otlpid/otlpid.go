// SPDX-License-Identifier: Apache-2.0

// Package otlpid parses OTLP trace and span ids written as hex, the form every runagain store,
// view and importer uses (W3C Trace Context: 32 and 16 lowercase hex characters).
package otlpid // import "github.com/runagain/runagain/internal/otlpid"

import (
	"encoding/hex"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// ParseTraceID reads a trace id of exactly 32 hex characters (either case). The error quotes
// the input and says what was wanted.
func ParseTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("trace id %q: want 32 hex characters", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return pcommon.TraceID{}, fmt.Errorf("trace id %q: want 32 hex characters", s)
	}
	return id, nil
}

// ParseSpanID reads a span id of exactly 16 hex characters (either case).
func ParseSpanID(s string) (pcommon.SpanID, error) {
	var id pcommon.SpanID
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("span id %q: want 16 hex characters", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return pcommon.SpanID{}, fmt.Errorf("span id %q: want 16 hex characters", s)
	}
	return id, nil
}
