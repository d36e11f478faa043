// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

// TestQuarantinePage lists the quarantined spans with their reason, escaped (a span name is
// untrusted), and says when none is configured.
func TestQuarantinePage(t *testing.T) {
	spans := []store.QuarantinedSpan{{ID: "x1", Received: time.Unix(1_800_000_000, 0).UTC(), Reason: "zero_trace_id",
		TraceID: "00000000000000000000000000000000", SpanID: "0102030405060708", Name: "<script>bad</script>", Service: "svc",
		OTLP: `{"resourceSpans":[]}`}}
	s, err := New(Options{Reader: &memReader{runs: map[string]*store.Run{}},
		Quarantine: func(context.Context, int) ([]store.QuarantinedSpan, error) { return spans, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	code, body := get(t, ts.URL+"/quarantine")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `data-quarantined="x1"`)
	assert.Contains(t, body, "zero_trace_id")
	assert.Contains(t, body, "&lt;script&gt;bad&lt;/script&gt;")
	assert.NotContains(t, body, "<script>bad")

	none, err := New(Options{Reader: &memReader{runs: map[string]*store.Run{}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = none.Close() })
	ts2 := httptest.NewServer(none)
	t.Cleanup(ts2.Close)
	_, body = get(t, ts2.URL+"/quarantine")
	assert.Contains(t, body, "No hot SQLite tier is configured")
}
