// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"crypto/sha256"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/otlpid"
)

// traceIDFromString parses a 32-hex-digit trace id (dashes of a UUID are ignored). Any other
// string, and the all-zero id (invalid in W3C Trace Context and OTLP, which a collector would
// quarantine), is mapped to the first 16 bytes of its SHA-256; exact is false then, and the
// caller keeps the original string in an attribute.
func traceIDFromString(s string) (id pcommon.TraceID, exact bool) {
	h := strings.ReplaceAll(strings.TrimSpace(s), "-", "")
	if tid, err := otlpid.ParseTraceID(h); err == nil && !tid.IsEmpty() {
		return tid, strings.EqualFold(h, s)
	}
	sum := sha256.Sum256([]byte(s))
	copy(id[:], sum[:16])
	return id, false
}

// spanIDFromString parses a 16-hex-digit span id; any other string, and the all-zero id, maps
// to the first 8 bytes of its SHA-256 (exact false).
func spanIDFromString(s string) (id pcommon.SpanID, exact bool) {
	h := strings.TrimSpace(s)
	if sid, err := otlpid.ParseSpanID(h); err == nil && !sid.IsEmpty() {
		return sid, h == s
	}
	sum := sha256.Sum256([]byte(s))
	copy(id[:], sum[:8])
	return id, false
}
