// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// TestOrphansGroupedUnderMissingParent: orphans of one missing parent are listed together under
// it (one level deeper) even when another subtree starts between them; a complete run is left
// in its order.
func TestOrphansGroupedUnderMissingParent(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	mk := func(id, parent byte, start uint64) {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{1})
		s.SetSpanID(pcommon.SpanID{id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent})
		}
		s.SetStartTimestamp(pcommon.Timestamp(start))
		s.SetEndTimestamp(pcommon.Timestamp(start + 10))
		s.SetName(string(rune('a' + id)))
	}
	mk(1, 0, 100) // root
	mk(2, 9, 200) // orphan of 9
	mk(3, 8, 300) // orphan of 8
	mk(4, 9, 400) // orphan of 9, after the orphan of 8
	mk(5, 4, 500) // child of 4
	view, err := showOf(&store.Run{TraceID: pcommon.TraceID{1}.String(), Traces: td, Logs: plog.NewLogs()})
	require.NoError(t, err)
	assert.True(t, view.Incomplete)
	assert.Equal(t, "3 orphan spans (parent not received)", view.IncompleteReason)
	var got []string
	for _, s := range view.Spans {
		got = append(got, s.SpanID[:2]+"/"+s.MissingParent+"/"+string(rune('0'+s.Depth)))
	}
	nine, eight := pcommon.SpanID{9}.String(), pcommon.SpanID{8}.String()
	assert.Equal(t, []string{"01//0", "02/" + nine + "/1", "04/" + nine + "/1", "05//2", "03/" + eight + "/1"}, got)
}
