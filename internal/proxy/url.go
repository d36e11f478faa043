package proxy

import (
	"net/url"
	"strings"
)

// parseURL parses a recorded url.full; a cassette URI without a scheme ("googleapis.com/x")
// is taken as https.
func parseURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	return url.Parse(s)
}
