// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoubledSegment: the version segment a route's URL ends in and the client adds again.
func TestDoubledSegment(t *testing.T) {
	for p, want := range map[string]string{
		"/v1/v1/chat/completions":     "/v1",
		"/api/v1/v1/chat/completions": "/v1",
		"/v1beta/v1beta/models":       "",
		"/v1/chat/completions":        "",
		"/v2/v2":                      "/v2",
		"/vv/vv/x":                    "",
		"/":                           "",
	} {
		assert.Equal(t, want, doubledSegment(p), p)
	}
}

// TestRouteWithVersionTwiceWarnsOnce: a route whose URL ends in /v1, used by a client whose base
// path adds /v1 again, still forwards as asked (the path is the user's), and the proxy says once
// why the upstream answers 404.
func TestRouteWithVersionTwiceWarnsOnce(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	defer up.Close()
	routes, err := NewRoutes([]string{"llm=" + up.URL + "/v1"})
	require.NoError(t, err)
	var logs bytes.Buffer
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: &captureSink{}, Logger: log.New(&logs, "", 0)}
	rec := NewRecorder(cfg, Root{TraceID: NewTraceID(), SpanID: NewSpanID()})
	purl := serve(t, rec, nil)
	for range 2 {
		resp, body := do(t, http.DefaultClient, mustReq(t, "POST", purl+"/llm/v1/chat/completions", `{}`))
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "/v1/v1/chat/completions", string(body))
	}
	_ = rec.Close()
	assert.Equal(t, 1, strings.Count(logs.String(), "with /v1 twice"), logs.String())
	assert.Contains(t, logs.String(), "--route NAME=http://"+strings.TrimPrefix(up.URL, "http://"))
}
