//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

// TestQuarantineTableOnChDB: before the table exists the dead-letter table lists nothing; after
// two writes of the same two spans (a client retrying) it lists each once, newest first, as
// written; the limit keeps the newest.
func TestQuarantineTableOnChDB(t *testing.T) {
	ctx := context.Background()
	srv, db := openChDB(t)
	schema := Schema{Database: "otel"}
	got, err := Quarantined(ctx, db, schema, 0)
	require.NoError(t, err, "no database yet reads as empty")
	assert.Empty(t, got)

	w := &Writer{DB: db, Schema: schema}
	require.NoError(t, w.CreateQuarantine(ctx, 72*time.Hour))
	t0 := time.Unix(1_800_000_000, 0).UTC()
	a := store.QuarantinedSpan{ID: "a", Received: t0, Reason: "zero_trace_id", TraceID: "00000000000000000000000000000000",
		SpanID: "0102030405060708", Name: "chat", Service: "svc", OTLP: `{"resourceSpans":[{"scopeSpans":[]}]}`}
	b := a
	b.ID, b.Received, b.Reason, b.SpanID = "b", t0.Add(time.Second), "zero_span_id", "0000000000000000"
	for i := 0; i < 2; i++ {
		require.NoError(t, w.Quarantine(ctx, []store.QuarantinedSpan{a, b}))
	}
	out, err := srv.Query("SELECT count() FROM otel.runagain_quarantine", "TSV")
	require.NoError(t, err)
	t.Logf("rows in the table before merges: %s", out)

	got, err = Quarantined(ctx, db, schema, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.QuarantinedSpan{b, a}, got, "once each, newest first")
	got, err = Quarantined(ctx, db, schema, 1)
	require.NoError(t, err)
	assert.Equal(t, []store.QuarantinedSpan{b}, got)
	ddl, err := srv.Query("SHOW CREATE TABLE otel.runagain_quarantine", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "ReplacingMergeTree")
	assert.Contains(t, ddl, "toIntervalSecond(259200)")
}
