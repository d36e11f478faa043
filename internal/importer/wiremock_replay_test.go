// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/proxy"
)

type wmCall struct {
	method, path, body string
	status             int
	want               string
}

// replayWireMock imports file and replays it through the real replay proxy (internal/proxy),
// making each call in order: every response must come back as the mapping wrote it.
func replayWireMock(t *testing.T, file string, calls []wmCall) {
	t.Helper()
	res, err := ParseFile("testdata/wiremock/" + file)
	if err != nil {
		t.Fatal(err)
	}
	tid := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
	rp, err := proxy.NewReplayer(proxy.Config{}, res.Traces, tid, proxy.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	srv := httptest.NewServer(rp)
	defer srv.Close()
	pu, _ := url.Parse(srv.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	for i, c := range calls {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, err := http.NewRequest(c.method, "http://localhost"+c.path, body)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(c.body, "{") {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || string(b) != c.want {
			t.Errorf("call %d %s %s: %d %q, want %d %q", i+1, c.method, c.path, resp.StatusCode, b, c.status, c.want)
		}
	}
}
