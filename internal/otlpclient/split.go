// SPDX-License-Identifier: Apache-2.0

package otlpclient

import "go.opentelemetry.io/collector/pdata/ptrace"

// Split divides td into Traces whose protobuf encoding stays at or below maxBytes, keeping
// every span whole with its resource and scope (resource and scope are repeated in each part
// that holds their spans). A span that alone exceeds maxBytes goes into a part of its own. The
// input is not modified; when td already fits it is returned as the only part.
func Split(td ptrace.Traces, maxBytes int) []ptrace.Traces {
	var m ptrace.ProtoMarshaler
	if maxBytes <= 0 || m.TracesSize(td) <= maxBytes {
		return []ptrace.Traces{td}
	}
	// Sizes are upper bounds: each nested message costs its size plus 1 tag byte and at most
	// 5 length bytes.
	const frame = 6
	var out []ptrace.Traces
	var cur ptrace.Traces
	var curRS ptrace.ResourceSpans
	var curSS ptrace.ScopeSpans
	size := 0
	curR, curS := -1, -1
	flush := func() {
		if size > 0 {
			out = append(out, cur)
		}
		cur, size, curR, curS = ptrace.NewTraces(), 0, -1, -1
	}
	flush()
	rss := td.ResourceSpans()
	for ri := 0; ri < rss.Len(); ri++ {
		rs := rss.At(ri)
		emptyRS := ptrace.NewResourceSpans()
		rs.Resource().CopyTo(emptyRS.Resource())
		emptyRS.SetSchemaUrl(rs.SchemaUrl())
		rsCost := m.ResourceSpansSize(emptyRS) + frame
		sss := rs.ScopeSpans()
		for si := 0; si < sss.Len(); si++ {
			ss := sss.At(si)
			emptySS := ptrace.NewScopeSpans()
			ss.Scope().CopyTo(emptySS.Scope())
			emptySS.SetSchemaUrl(ss.SchemaUrl())
			ssCost := m.ScopeSpansSize(emptySS) + frame
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				need := m.SpanSize(sp) + frame
				switch {
				case curR != ri:
					need += rsCost + ssCost
				case curS != si:
					need += ssCost
				}
				if size > 0 && size+need > maxBytes {
					flush()
					need = m.SpanSize(sp) + frame + rsCost + ssCost
				}
				if curR != ri {
					curRS = cur.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(curRS.Resource())
					curRS.SetSchemaUrl(rs.SchemaUrl())
					curR, curS = ri, -1
				}
				if curS != si {
					curSS = curRS.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(curSS.Scope())
					curSS.SetSchemaUrl(ss.SchemaUrl())
					curS = si
				}
				sp.CopyTo(curSS.Spans().AppendEmpty())
				size += need
			}
		}
	}
	flush()
	return out
}
