// SPDX-License-Identifier: Apache-2.0

package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func span(ss ptrace.SpanSlice, id, parent byte, start uint64) ptrace.Span {
	s := ss.AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1})
	s.SetSpanID(pcommon.SpanID{id})
	if parent != 0 {
		s.SetParentSpanID(pcommon.SpanID{parent})
	}
	s.SetStartTimestamp(pcommon.Timestamp(start))
	s.SetName(string('a' + rune(id)))
	return s
}

func ids(flat []*Node) []byte {
	var out []byte
	for _, n := range flat {
		out = append(out, n.Span.SpanID()[0])
	}
	return out
}

func TestOrderStartThenParentThenSpanID(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	// A child that starts at the same instant as its parent still comes after it; equal start
	// times among siblings fall back to span id.
	span(ss, 5, 1, 100)
	span(ss, 4, 1, 100)
	span(ss, 1, 0, 100)
	span(ss, 3, 1, 50) // starts before its parent (clock skew): still after the parent
	span(ss, 6, 9, 10) // orphan: its parent is not in the run, it becomes a root
	roots, flat := Order(td, nil)
	assert.Len(t, roots, 2)
	assert.Equal(t, []byte{6, 1, 3, 4, 5}, ids(flat))
	assert.Equal(t, 1, flat[2].Depth)
}

func TestOrderSequenceAttributeWins(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	span(ss, 1, 0, 100)
	span(ss, 2, 1, 300).Attributes().PutInt("runagain.sequence", 1)
	span(ss, 3, 1, 200).Attributes().PutInt("runagain.sequence", 2)
	_, flat := Order(td, nil)
	assert.Equal(t, []byte{1, 2, 3}, ids(flat))
}

func TestOrderSurvivesParentCycle(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	span(ss, 1, 2, 100)
	span(ss, 2, 1, 200)
	span(ss, 3, 3, 300) // its own parent
	_, flat := Order(td, nil)
	assert.ElementsMatch(t, []byte{1, 2, 3}, ids(flat), "every span shown exactly once")
}

// TestOrderSameStartEndsFirst: siblings that start in the same millisecond (Node SDK timestamps)
// are ordered by end: the tool call that ended before the next LLM call began its work comes
// first, whatever their span ids; a span with no end reads as ending at its start.
func TestOrderSameStartEndsFirst(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	span(ss, 1, 0, 0).SetEndTimestamp(1000)
	span(ss, 2, 1, 100).SetEndTimestamp(900) // the LLM call after the tool
	span(ss, 9, 1, 100).SetEndTimestamp(101) // the tool, a higher span id
	span(ss, 5, 1, 100)                      // unfinished: ends at its start
	_, flat := Order(td, nil)
	assert.Equal(t, []byte{1, 5, 9, 2}, ids(flat))
}
