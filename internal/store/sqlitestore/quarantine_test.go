// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// TestQuarantineStoredOnce: quarantined spans are listed newest first by a reader of the file; a
// retried write of the same span stores it once; a file without the table lists nothing.
func TestQuarantineStoredOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if got, err := w.Quarantined(ctx, 0); err != nil || len(got) != 0 {
		t.Fatalf("before any: %v %v", got, err)
	}
	t0 := time.Unix(1_800_000_000, 0).UTC()
	a := store.QuarantinedSpan{ID: "a", Received: t0, Reason: "zero_trace_id", TraceID: "00000000000000000000000000000000", SpanID: "0102030405060708", Name: "chat", OTLP: `{"resourceSpans":[]}`}
	b := a
	b.ID, b.Received, b.Reason = "b", t0.Add(time.Second), "zero_span_id"
	for i := 0; i < 2; i++ {
		if err := w.Quarantine(ctx, []store.QuarantinedSpan{a, b}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	got, err := r.Quarantined(ctx, 0)
	if err != nil || len(got) != 2 || got[0] != b || got[1] != a {
		t.Fatalf("quarantined: %+v %v, want b then a, once each", got, err)
	}
}
