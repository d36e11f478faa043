// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// TestSpanRequestsAsSpanTraces: each span's request cut from the whole request's bytes is the
// same bytes as marshaling the span alone with its resource and scope (store.SpanTraces), for
// the fixtures, the bench's requests and a request with schema URLs and an empty resource.
func TestSpanRequestsAsSpanTraces(t *testing.T) {
	odd := ptrace.NewTraces()
	rs := odd.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.SetSchemaUrl("https://opentelemetry.io/schemas/1.29.0")
	ss.Scope().SetName("s")
	ss.Scope().SetVersion("1")
	for i := 0; i < 3; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetName("x")
		s.TraceState().FromRaw("a=b")
	}
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("empty scope")
	odd.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty() // no spans
	for _, td := range append([]ptrace.Traces{fixtureRuns("w", 5), odd}, benchRequests(2, 3)...) {
		var m ptrace.ProtoMarshaler
		req, err := m.MarshalTraces(td)
		require.NoError(t, err)
		var got [][]byte
		require.NoError(t, spanRequests(req, func(s wireSpan) { got = append(got, appendRequest(nil, s)) }))
		var want [][]byte
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					b, err := m.MarshalTraces(store.SpanTraces(rs, ss, ss.Spans().At(k)))
					require.NoError(t, err)
					want = append(want, b)
				}
			}
		}
		require.Len(t, got, len(want))
		for i := range want {
			require.True(t, bytes.Equal(want[i], got[i]), "span %d:\n%x\n%x", i, want[i], got[i])
		}
	}
}
