// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestRunURLsTakeTracePrefixes: /runs/PREFIX and /runs/PREFIX/steps/N redirect to the full trace
// id (the query kept), as `runagain show PREFIX` reads it; an ambiguous prefix is a 400 naming
// both runs, no match a 404, a short one a 400 (it used to be "want 32 hex characters" for all).
func TestRunURLsTakeTracePrefixes(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := synthRun(0xab, at, 4, "a"), synthRun(0xac, at.Add(time.Second), 4, "b")
	c := synthRun(0xac, at.Add(2*time.Second), 4, "c") // retraced to share all but its last digit with b
	tid := pcommon.TraceID{0xac, 1, 15: 9}
	spans := c.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		spans.At(i).SetTraceID(tid)
	}
	c.TraceID = tid.String()
	_, ts := newTestServer(t, a, b, c)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{
		"/runs/" + a.TraceID[:8]:                   "/runs/" + a.TraceID,
		"/runs/" + strings.ToUpper(a.TraceID[:10]): "/runs/" + a.TraceID,
		"/runs/" + a.TraceID[:8] + "/steps/1?x=1":  "/runs/" + a.TraceID + "/steps/1?x=1",
	} {
		res, err := noFollow.Get(ts.URL + path)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusFound, res.StatusCode, path)
		assert.Equal(t, want, res.Header.Get("Location"), path)
	}
	code, body := get(t, ts.URL+"/runs/"+a.TraceID[:8])
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, a.TraceID)

	code, body = get(t, ts.URL+"/runs/"+b.TraceID[:12])
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "matches 2 runs")
	assert.Contains(t, body, c.TraceID)
	code, body = get(t, ts.URL+"/runs/a") // too short
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "prefix of at least")
	code, _ = get(t, ts.URL+"/runs/ffffffff")
	assert.Equal(t, http.StatusNotFound, code)
}
