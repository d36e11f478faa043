// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/url"
	"testing"

	"github.com/runagain/runagain/internal/redact"
)

// FuzzMatch: the proxy's request matching (normalisation of query and body, the first
// difference, the similarity used to name the nearest recording) never panics on any pair of
// requests; a request always matches itself; two requests differ exactly when diff says so.
func FuzzMatch(f *testing.F) {
	f.Add("POST", "/v1/chat/completions?api-version=1", "application/json",
		[]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi jane.doe@example.com"}]}`),
		[]byte(`{"messages":[{"content":"hi jane.doe@example.com","role":"user"}],"model":"gpt-4o"}`))
	f.Add("POST", "/mcp", "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"y"}}`))
	f.Add("POST", "/upload", "multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\r\nhello\r\n--XX--\r\n"),
		[]byte("--XX\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nbye\r\n--XX--\r\n"))
	f.Add("GET", "/search?q=a&q=b", "application/x-www-form-urlencoded", []byte("a=1&b=%zz"), []byte(`[1,2`))
	rd, err := redact.New(redact.Config{HashKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		f.Fatal(err)
	}
	n := Normalizer{Redactor: rd, IgnoreBody: []string{"metadata.request_id", "messages[*].id"}, IgnoreQuery: []string{"ts"}}
	f.Fuzz(func(t *testing.T, method, target, contentType string, a, b []byte) {
		u, err := url.Parse(target)
		if err != nil {
			return
		}
		ra := n.normalize(method, u, contentType, a)
		rb := n.normalize(method, u, contentType, b)
		if d, differ := diff(ra, n.normalize(method, u, contentType, a)); differ {
			t.Fatalf("a request does not match itself: %s", d)
		}
		_, differ := diff(ra, rb)
		if !differ && ra.key() != rb.key() {
			t.Fatalf("no difference reported, yet keys differ: %q vs %q", ra.key(), rb.key())
		}
		_ = similarity(ra, rb)
	})
}
