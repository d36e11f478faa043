// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"crypto/rand"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// NewTraceID returns a random trace id.
func NewTraceID() pcommon.TraceID {
	var id pcommon.TraceID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}

// NewSpanID returns a random span id.
func NewSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}
