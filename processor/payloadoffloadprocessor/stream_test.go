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
