// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestStreamOf: a value's stream is its conversation (gen_ai.conversation.id, then session.id),
// else its trace; nothing without either.
func TestStreamOf(t *testing.T) {
	trace := pcommon.TraceID{1, 2, 3}
	m := pcommon.NewMap()
	if got := streamOf(m, pcommon.TraceID{}); got != "" {
		t.Fatalf("no conversation, no trace: %q", got)
	}
	if got := streamOf(m, trace); got != string(trace[:]) {
		t.Fatalf("trace: %q", got)
	}
	m.PutStr("session.id", "s-1")
	if got := streamOf(m, trace); got != "s-1" {
		t.Fatalf("session.id: %q", got)
	}
	m.PutStr("gen_ai.conversation.id", "c-1")
	if got := streamOf(m, trace); got != "c-1" {
		t.Fatalf("gen_ai.conversation.id: %q", got)
	}
	m.PutInt("gen_ai.conversation.id", 5)
	if got := streamOf(m, trace); got != "s-1" {
		t.Fatalf("non-string conversation id: %q", got)
	}
}

// TestChains: in the pack layout the jobs of one stream are stored one after the other in batch
// order (each finds its predecessor's plan memo); jobs without a stream, and every job in the
// single-object layout, are stored on their own.
func TestChains(t *testing.T) {
	a1, b1, a2, n, a3 := &job{stream: "a"}, &job{stream: "b"}, &job{stream: "a"}, &job{}, &job{stream: "a"}
	order := []*job{a1, b1, a2, n, a3}
	got := chains(order, true)
	if len(got) != 3 || len(got[0]) != 3 || got[0][0] != a1 || got[0][1] != a2 || got[0][2] != a3 ||
		len(got[1]) != 1 || got[1][0] != b1 || len(got[2]) != 1 || got[2][0] != n {
		t.Fatalf("packed chains: %v", got)
	}
	if got := chains(order, false); len(got) != len(order) {
		t.Fatalf("single-object chains: %d, want %d", len(got), len(order))
	}
}

// TestChainsShortestFirst: a stream's values are stored shortest first whatever their order in
// the batch (an SDK exports a turn's chat calls as they end: the last, longest history, first),
// so that each resent history extends the value stored before it; equal lengths keep batch order.
func TestChainsShortestFirst(t *testing.T) {
	v := func(s string) *job { return &job{jobKey: jobKey{value: s}, stream: "c"} }
	c3, c2, c1, e1, e2 := v(`[1,2,3]`), v(`[1,2]`), v(`[1]`), v(`[9]`), v(`[8]`)
	got := chains([]*job{c3, c2, c1, e1, e2}, true)
	want := []*job{c1, e1, e2, c2, c3}
	if len(got) != 1 || len(got[0]) != len(want) {
		t.Fatalf("chains: %v", got)
	}
	for i := range want {
		if got[0][i] != want[i] {
			t.Fatalf("chain[%d] = %q, want %q", i, got[0][i].value, want[i].value)
		}
	}
}
