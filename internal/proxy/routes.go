// SPDX-License-Identifier: Apache-2.0

// Package proxy is runagain's record/replay HTTP proxy, built on github.com/elazarl/goproxy.
//
// Record mode forwards every request to its upstream and turns each exchange into a fixture
// span (internal/fixture: an HTTP client span with redacted headers and full bodies, SSE chunks
// as events) sent to the collector over OTLP. Replay mode reads a recorded run and answers every
// request from it, in recorded order per match key, without touching the network; the first
// request that matches nothing gets an error response naming the field that differs from the
// nearest recorded request, and the replay is marked diverged.
//
// Requests reach the proxy three ways, all handled by one goproxy server:
//   - reverse-proxy routes: "/<name>/<rest>" goes to "<target>/<rest>" (an SDK only changes
//     its base URL, e.g. OPENAI_BASE_URL=http://127.0.0.1:8765/openai/v1);
//   - plain HTTP forward proxying (HTTP_PROXY=http://127.0.0.1:8765);
//   - HTTPS through CONNECT, intercepted with a locally generated CA when one is configured
//     (opt-in; see ca.go and README.md for the trust steps), otherwise tunnelled unrecorded in
//     record mode and refused in replay mode.
package proxy

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Route maps the path prefix "/<Name>/" to the upstream base URL Target.
type Route struct {
	Name   string
	Target *url.URL
}

// DefaultRoutes are the routes every proxy has unless overridden with the same name.
var DefaultRoutes = []string{
	"openai=https://api.openai.com",
	"anthropic=https://api.anthropic.com",
	"gemini=https://generativelanguage.googleapis.com",
	"mistral=https://api.mistral.ai",
	"groq=https://api.groq.com",
	"cohere=https://api.cohere.com",
}

// BaseURLEnv are environment variables pointing an SDK at a route, with the path suffix its SDK
// expects: "OPENAI_BASE_URL" -> "/openai/v1".
var BaseURLEnv = map[string]string{
	"OPENAI_BASE_URL":    "/openai/v1",
	"OPENAI_API_BASE":    "/openai/v1",
	"ANTHROPIC_BASE_URL": "/anthropic",
	"GROQ_BASE_URL":      "/groq",
	"MISTRAL_BASE_URL":   "/mistral",
	"CO_API_URL":         "/cohere",
}

// ParseRoute parses "name=https://host[/base]". Errors name the flag value.
func ParseRoute(s string) (Route, error) {
	name, target, ok := strings.Cut(s, "=")
	name = strings.Trim(strings.TrimSpace(name), "/")
	if !ok || name == "" || strings.ContainsAny(name, "/?#%") || strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return Route{}, fmt.Errorf("route %q: want NAME=URL, NAME one path segment without spaces, e.g. openai=https://api.openai.com", s)
	}
	target = strings.TrimSpace(target)
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if !strings.Contains(target, "://") && target != "" {
			return Route{}, fmt.Errorf("route %q: target must be an absolute http or https URL: did you mean %s=http://%s?", s, name, target)
		}
		return Route{}, fmt.Errorf("route %q: target must be an absolute http or https URL", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Route{}, fmt.Errorf("route %q: port %s is not a TCP port (1-65535)", s, p)
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return Route{Name: name, Target: u}, nil
}

// Routes is a set of routes by name.
type Routes map[string]Route

// NewRoutes parses DefaultRoutes, then specs (a later spec with a known name replaces it).
func NewRoutes(specs []string) (Routes, error) {
	rs := Routes{}
	for _, s := range append(append([]string(nil), DefaultRoutes...), specs...) {
		r, err := ParseRoute(s)
		if err != nil {
			return nil, err
		}
		rs[r.Name] = r
	}
	return rs, nil
}

// Resolve maps a proxy-relative request URL ("/openai/v1/chat?x=1") to its upstream URL.
func (rs Routes) Resolve(u *url.URL) (*url.URL, bool) {
	p := strings.TrimPrefix(u.Path, "/")
	name, rest, _ := strings.Cut(p, "/")
	r, ok := rs[name]
	if !ok {
		return nil, false
	}
	out := *r.Target
	out.Path = r.Target.Path + "/" + rest
	if u.RawPath != "" {
		raw := strings.TrimPrefix(u.RawPath, "/")
		_, rawRest, _ := strings.Cut(raw, "/")
		out.RawPath = r.Target.EscapedPath() + "/" + rawRest
	}
	out.RawQuery = u.RawQuery
	return &out, true
}

// Names lists the route prefixes, sorted, for messages.
func (rs Routes) Names() []string {
	var out []string
	for n, r := range rs {
		out = append(out, "/"+n+"/ -> "+r.Target.String())
	}
	sort.Strings(out)
	return out
}
