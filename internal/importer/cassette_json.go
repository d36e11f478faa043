package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/cdproto/har"
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

// HAR reads HTTP Archive 1.2 files ({"log": {"entries": [...]}}, e.g. Polly.JS recordings) with
// the HAR types of github.com/chromedp/cdproto/har:
// request method, url, headers and postData.text; response status, headers and content.text
// (base64 when content.encoding is "base64"), content.mimeType as Content-Type when no header
// gives one; startedDateTime and time (ms) give the span times; HTTP/2 pseudo-headers are left out.
type HAR struct{}

// Name implements Format.
func (Nock) Name() string { return "nock" }

// Detect implements Format: a JSON array whose first element has scope, method and path, or an
// empty array (nock writes "[]" for a test that made no request).
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
	return cassetteTraces("nock", data, exs), nil
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

// Name implements Format.
func (HAR) Name() string { return "har" }

// Detect implements Format: an object with a "log" holding "entries".
func (HAR) Detect(s *Sniff) bool {
	if !s.Has("log") {
		return false
	}
	var l map[string]json.RawMessage
	if json.Unmarshal(s.Keys["log"], &l) != nil {
		return false
	}
	_, ok := l["entries"]
	return ok
}

// harEntry is a HAR 1.2 entry (the types of github.com/chromedp/cdproto/har, generated from the
// HAR schema of the Chrome DevTools protocol) with two fields read differently: time stays
// absent when the file has none (no end time, rather than a zero duration), and
// request.postData.encoding, which HAR 1.2 does not define but recorders write for a binary
// request body, is read like response.content.encoding.
type harEntry struct {
	har.Entry
	Time    *float64    `json:"time"`
	Request *harRequest `json:"request"`
}

type harRequest struct {
	har.Request
	PostData *harPostData `json:"postData"`
}

type harPostData struct {
	har.PostData
	Encoding string `json:"encoding"`
}

// Parse implements Format.
func (HAR) Parse(data []byte) (ptrace.Traces, error) {
	var doc struct {
		Log struct {
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return ptrace.Traces{}, jsonError(data, 0, err)
	}
	var exs []*fixture.Exchange
	for i, r := range doc.Log.Entries {
		off := int64(bytes.Index(data, r))
		var e harEntry
		if err := json.Unmarshal(r, &e); err != nil {
			var b64 base64.CorruptInputError
			if errors.As(err, &b64) { // har.Content decodes base64 text itself
				return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d].response.content.text: invalid base64: %v", i, b64)
			}
			return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d]: %v", i, err)
		}
		req, resp := e.Request, e.Response
		if req == nil || req.Method == "" || req.URL == "" {
			return ptrace.Traces{}, errorAt(data, off, nil, "har log.entries[%d].request: method and url are required", i)
		}
		if resp == nil {
			resp = &har.Response{}
		}
		ex := &fixture.Exchange{Method: req.Method, URL: req.URL, Status: int(resp.Status),
			RequestHeader: http.Header{}, ResponseHeader: http.Header{}}
		if v := strings.TrimPrefix(strings.ToUpper(req.HTTPVersion), "HTTP/"); v != "" && v != req.HTTPVersion {
			ex.Protocol = strings.TrimSuffix(v, ".0")
		}
		for _, h := range req.Headers {
			if h != nil && !strings.HasPrefix(h.Name, ":") {
				headerAdd(ex.RequestHeader, h.Name, h.Value)
			}
		}
		for _, h := range resp.Headers {
			if h != nil && !strings.HasPrefix(h.Name, ":") {
				headerAdd(ex.ResponseHeader, h.Name, h.Value)
			}
		}
		content := resp.Content
		if content == nil {
			content = &har.Content{}
		}
		if ex.ResponseHeader.Get("Content-Type") == "" && content.MimeType != "" {
			ex.ResponseHeader.Set("Content-Type", content.MimeType)
		}
		if pd := req.PostData; pd != nil {
			ex.RequestBody = []byte(pd.Text)
			if pd.Encoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(pd.Text)
				if err != nil {
					return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d].request.postData.text: invalid base64: %v", i, err)
				}
				ex.RequestBody = b
			}
		}
		ex.ResponseBody = content.Text // base64 already decoded (content.encoding)
		if ex.Status == 0 {
			return ptrace.Traces{}, errorAt(data, off, nil, "har log.entries[%d].response.status: missing", i)
		}
		if t, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err == nil {
			ex.Start = t
			if e.Time != nil && *e.Time >= 0 {
				ex.End = t.Add(time.Duration(*e.Time * float64(time.Millisecond)))
			}
		}
		exs = append(exs, ex)
	}
	return cassetteTraces("har", data, exs), nil
}
