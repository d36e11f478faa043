// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/url"
	"strings"

	"github.com/runagain/runagain/internal/redact"
)

// redactURL gives url.full with user info removed and query values redacted.
func redactURL(rd *redact.Redactor, u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.UserPassword("REDACTED", "REDACTED")
	}
	if rd != nil && c.RawQuery != "" {
		q := c.Query()
		changed := false
		for k, vs := range q {
			for i, v := range vs {
				if nv, fs := rd.RedactKeyed(k, v); len(fs) > 0 {
					vs[i] = nv
					changed = true
				}
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

// credentialHeaders carry a credential whatever their value looks like: HTTP authentication
// (RFC 9110 sections 11.6.2 and 11.7.2), cookies (RFC 6265) and the API-key headers of the LLM
// providers the proxy routes (OpenAI/Azure api-key, Anthropic x-api-key, Gemini x-goog-api-key).
// Their values are never recorded, even one that looks like a placeholder ("sk-test-123"):
// replay does not match on headers, so nothing needs them.
var credentialHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "api-key": true, "x-goog-api-key": true, "x-auth-token": true,
}

// recordedHeaderValue is the value of header k as recorded: through the redactor when there is
// one; a credential header's value that is still as sent (no redactor, or a value the redactor
// took for a placeholder) is replaced whole with "[REDACTED:<lower-case header name>]".
func recordedHeaderValue(rd *redact.Redactor, k, v string) string {
	out := v
	if rd != nil {
		out, _ = rd.RedactKeyed(k, v)
	}
	if lk := strings.ToLower(k); credentialHeaders[lk] && out == v && v != "" {
		return "[REDACTED:" + lk + "]"
	}
	return out
}
