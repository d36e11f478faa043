// SPDX-License-Identifier: Apache-2.0

package store

import "time"

// QuarantinedSpan is a span the pipeline could not store as a span (an all-zero trace_id or
// span_id, invalid per the OTLP specification), kept whole in the hot tier's dead-letter table
// beside the valid spans of its request, with the reason, so that broken instrumentation is
// found and nothing it sent is dropped.
type QuarantinedSpan struct {
	// ID is the hex SHA-256 of Reason and OTLP: a request retried by its client stores it once.
	ID string `json:"id"`
	// Received is when the collector took it.
	Received time.Time `json:"received"`
	// Reason: "zero_trace_id" or "zero_span_id".
	Reason string `json:"reason"`
	// TraceID and SpanID are the ids as sent (hex, possibly all zeros); Name the span's name.
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
	Name    string `json:"name"`
	// Service is the resource's service.name ("" without one).
	Service string `json:"service"`
	// OTLP is an OTLP JSON TracesData holding the span alone, with its resource and scope, as
	// received.
	OTLP string `json:"otlp"`
}
