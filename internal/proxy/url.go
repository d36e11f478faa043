// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/url"
	"strings"
)

// parseURL parses a recorded url.full. A cassette URI without a scheme ("googleapis.com/x") is
// taken as https. A URL whose authority no longer parses (a redaction processor replaced the
// host with a token such as "ipv4_address:1a2b3c4d5e6f") still yields its path and query, which
// is all replay matches on.
func parseURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err == nil {
		return u, nil
	}
	scheme, rest, _ := strings.Cut(s, "://")
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		return nil, err
	}
	u2, err2 := url.Parse(rest[i:])
	if err2 != nil {
		return nil, err
	}
	u2.Scheme, u2.Host = scheme, "redacted.invalid"
	return u2, nil
}
