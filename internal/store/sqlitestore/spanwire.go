// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// The hot row of a span is the ExportTraceServiceRequest of that span alone with its resource
// and scope (store.SpanTraces, marshaled). Building it with pdata copies the resource, the scope
// and the span for every span; instead the request is marshaled once and each span's request is
// assembled from its bytes (spanRequests): protobuf encodes a message as its fields one after the
// other, so the one-span request is the resource span's other fields around the scope span's
// other fields around the span's field, in the order pdata wrote them, each length prefix
// recomputed. The result is the same bytes as
// marshaling store.SpanTraces (TestSpanRequestsAsSpanTraces).
//
//	ExportTraceServiceRequest: 1 resource_spans (repeated)
//	ResourceSpans: 1 resource, 2 scope_spans (repeated), 3 schema_url
//	ScopeSpans:    1 scope,    2 spans (repeated),       3 schema_url
//
// https://protobuf.dev/programming-guides/encoding/, opentelemetry-proto trace/v1/trace.proto.

// wireSpan is where one span's parts are in a marshaled request: the fields of its resource span
// before and after scope_spans, of its scope span before and after spans, and the span field
// (tag, length and message).
type wireSpan struct {
	rsHead, rsTail, ssHead, ssTail, span []byte
}

var errWire = errors.New("malformed OTLP traces request")

// spanRequests calls yield for each span of the marshaled request req, in order.
func spanRequests(req []byte, yield func(wireSpan)) error {
	return eachField(req, func(num protowire.Number, _ []byte, rs []byte) error {
		if num != 1 {
			return nil
		}
		var head, tail []byte
		if err := splitAround(rs, 2, &head, &tail); err != nil {
			return err
		}
		return eachField(rs, func(num protowire.Number, _ []byte, ss []byte) error {
			if num != 2 {
				return nil
			}
			var sHead, sTail []byte
			if err := splitAround(ss, 2, &sHead, &sTail); err != nil {
				return err
			}
			return eachField(ss, func(num protowire.Number, field []byte, _ []byte) error {
				if num == 2 {
					yield(wireSpan{rsHead: head, rsTail: tail, ssHead: sHead, ssTail: sTail, span: field})
				}
				return nil
			})
		})
	})
}

// eachField calls f with each field of the message m: its number, its whole encoding (tag
// included) and, for a length-delimited field, its content.
func eachField(m []byte, f func(num protowire.Number, field, content []byte) error) error {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return errWire
		}
		k := protowire.ConsumeFieldValue(num, typ, m[n:])
		if k < 0 {
			return errWire
		}
		var content []byte
		if typ == protowire.BytesType {
			v, j := protowire.ConsumeBytes(m[n:])
			if j < 0 {
				return errWire
			}
			content = v
		}
		if err := f(num, m[:n+k], content); err != nil {
			return err
		}
		m = m[n+k:]
	}
	return nil
}

// splitAround returns the fields of m before its first field num (head) and after its last
// (tail): the parts of a one-element copy of m around its field num, in m's order (pdata writes
// a message's fields from the highest number down). A field of another number between two
// fields num is an error.
func splitAround(m []byte, num protowire.Number, head, tail *[]byte) error {
	first, last, pos := -1, -1, 0
	other := false
	err := eachField(m, func(n protowire.Number, field, _ []byte) error {
		if n == num {
			if other && first >= 0 {
				return errWire
			}
			if first < 0 {
				first = pos
			}
			last = pos + len(field)
		} else if first >= 0 {
			other = true
		}
		pos += len(field)
		return nil
	})
	if err != nil {
		return err
	}
	if first < 0 {
		*head, *tail = m, nil
		return nil
	}
	*head, *tail = m[:first], m[last:]
	return nil
}

// appendRequest appends the one-span ExportTraceServiceRequest of s to dst.
func appendRequest(dst []byte, s wireSpan) []byte {
	ss := len(s.ssHead) + len(s.span) + len(s.ssTail)
	rs := len(s.rsHead) + protowire.SizeTag(2) + protowire.SizeBytes(ss) + len(s.rsTail)
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(rs))
	dst = append(dst, s.rsHead...)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(ss))
	dst = append(dst, s.ssHead...)
	dst = append(dst, s.span...)
	dst = append(dst, s.ssTail...)
	return append(dst, s.rsTail...)
}
