// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
)

// Nock reads nock JSON recordings (nock.recorder with output_objects): a JSON array of
// {"scope", "method", "path", "body", "status", "response", "rawHeaders", "responseIsBinary"}.
// A JSON body or response is re-encoded compactly in recorded key order; a response given as an
// array of hex strings (nock's form for compressed bodies) is the concatenation of their bytes;
// responseIsBinary means the response string is hex. A JSON response without a recorded
// Content-Type gets "application/json" (what nock replies with for an object).
type Nock struct{}

// Name implements Format.
func (Nock) Name() string { return "nock" }

// Detect implements Format: a JSON array whose first element has scope, method and path, or an
// empty array (nock writes "[]" for a test that made no request; Parse refuses it with
// ErrNoExchanges, naming the format instead of "unknown format").
func (Nock) Detect(s *Sniff) bool {
	if s.Keys != nil || s.JSONErr != nil {
		return false
	}
	t := bytes.TrimLeft(s.Data, " \t\r\n\ufeff")
	if len(t) == 0 || t[0] != '[' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	if _, err := dec.Token(); err != nil {
		return false
	}
	if !dec.More() {
		return true // "[]": a nock recording of no request
	}
	var first map[string]json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return false
	}
	_, a := first["scope"]
	_, b := first["method"]
	_, c := first["path"]
	return a && b && c
}

type nockEntry struct {
	Scope            string          `json:"scope"`
	Method           string          `json:"method"`
	Path             string          `json:"path"`
	Body             json.RawMessage `json:"body"`
	Status           int             `json:"status"`
	Response         json.RawMessage `json:"response"`
	RawHeaders       json.RawMessage `json:"rawHeaders"`
	ResponseIsBinary bool            `json:"responseIsBinary"`
}

// Parse implements Format.
func (Nock) Parse(data []byte) (ptrace.Traces, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return ptrace.Traces{}, jsonError(data, 0, err)
	}
	var exs []*fixture.Exchange
	for i, r := range raw {
		what := fmt.Sprintf("[%d]", i)
		off := int64(bytes.Index(data, r))
		var e nockEntry
		if err := json.Unmarshal(r, &e); err != nil {
			return ptrace.Traces{}, errorAt(data, off, err, "nock %s: %v", what, err)
		}
		if e.Scope == "" || e.Method == "" {
			return ptrace.Traces{}, errorAt(data, off, nil, "nock %s: scope and method are required", what)
		}
		if e.Status == 0 {
			e.Status = 200
		}
		ex := &fixture.Exchange{Method: strings.ToUpper(e.Method), URL: nockURL(e.Scope, e.Path), Status: e.Status,
			RequestHeader: http.Header{}, ResponseHeader: http.Header{}}
		var err error
		if ex.RequestBody, err = nockBody(e.Body, false); err != nil {
			return ptrace.Traces{}, errorAt(data, off, err, "nock %s.body: %v", what, err)
		}
		if ex.ResponseBody, err = nockBody(e.Response, e.ResponseIsBinary); err != nil {
			return ptrace.Traces{}, errorAt(data, off, err, "nock %s.response: %v", what, err)
		}
		if err := nockHeaders(e.RawHeaders, ex.ResponseHeader); err != nil {
			return ptrace.Traces{}, errorAt(data, off, err, "nock %s.rawHeaders: %v", what, err)
		}
		if ct := ex.ResponseHeader.Get("Content-Type"); ct == "" && isJSONValue(e.Response) {
			ex.ResponseHeader.Set("Content-Type", "application/json")
		}
		exs = append(exs, ex)
	}
	return cassetteTraces("nock", data, exs)
}

// nockURL joins nock's scope ("https://api.openai.com:443") and path, dropping default ports.
func nockURL(scope, path string) string {
	scope = strings.TrimSuffix(scope, "/")
	if strings.HasPrefix(scope, "https://") {
		scope = strings.TrimSuffix(scope, ":443")
	} else if strings.HasPrefix(scope, "http://") {
		scope = strings.TrimSuffix(scope, ":80")
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return scope + path
}

func isJSONValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '{' || (t[0] == '[' && !hexArray(t)))
}

// hexArray reports whether raw is a non-empty JSON array of hex strings.
func hexArray(raw json.RawMessage) bool {
	var parts []string
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if _, err := hex.DecodeString(p); err != nil {
			return false
		}
	}
	return true
}

func nockBody(raw json.RawMessage, binary bool) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	switch t[0] {
	case '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, err
		}
		if binary {
			return hex.DecodeString(s)
		}
		return []byte(s), nil
	case '[':
		if hexArray(t) {
			var parts []string
			_ = json.Unmarshal(t, &parts)
			var out []byte
			for _, p := range parts {
				b, _ := hex.DecodeString(p)
				out = append(out, b...)
			}
			return out, nil
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// nockHeaders reads rawHeaders as an object {name: value|[values]} or a flat [name, value, ...] list.
func nockHeaders(raw json.RawMessage, h http.Header) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	if t[0] == '[' {
		var flat []string
		if err := json.Unmarshal(t, &flat); err != nil {
			return err
		}
		for i := 0; i+1 < len(flat); i += 2 {
			headerAdd(h, flat[i], flat[i+1])
		}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return err
	}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			headerAdd(h, k, s)
			continue
		}
		var ss []string
		if err := json.Unmarshal(v, &ss); err != nil {
			return fmt.Errorf("%s: expected a string or a list of strings", k)
		}
		for _, s := range ss {
			headerAdd(h, k, s)
		}
	}
	return nil
}
