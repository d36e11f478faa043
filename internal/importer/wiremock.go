// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/fixture"
)

func init() {
	Default.Register(WireMock{})
}

// WireMock reads WireMock stub mappings, JSON or YAML: one mapping ({"request": ..., "response":
// ...}), a mappings file ({"mappings": [...]}), an array of mappings, or (YAML) several documents
// of those. Each mapping becomes one exchange of a fixture trace, in file order:
//
//   - request.method ("ANY" becomes GET); request.url, urlPath, or (as written) urlPattern,
//     urlPathPattern, urlPathTemplate, joined to http://localhost (replay does not match hosts);
//     queryParameters and headers with an equalTo value; the body from the first bodyPatterns
//     entry with equalToJson (re-encoded compactly in written key order), equalTo or
//     binaryEqualTo (base64).
//   - response.status (default 200), headers (a value or a list of values), and the body from
//     body, jsonBody (compact, written key order) or base64Body; fixedDelayMilliseconds gives the
//     exchange's duration. bodyFileName (a file under __files) is not read: the error names it.
//
// Matchers that describe many requests (matches, contains, JSON paths) cannot be turned into one
// recorded request; they are left out, so replay compares only what the mapping states exactly.
type WireMock struct{}

// Name implements Format.
func (WireMock) Name() string { return "wiremock" }

var (
	reWireMockYAML     = regexp.MustCompile(`(?m)^(?:request|response|mappings):[ \t]*(?:#.*)?$`)
	reWireMockYAMLReq  = regexp.MustCompile(`(?m)^request:[ \t]*(?:#.*)?$`)
	reWireMockYAMLMaps = regexp.MustCompile(`(?m)^mappings:[ \t]*(?:#.*)?$`)
)

// Detect implements Format: a JSON object with request and response, or with a mappings array,
// or a JSON array of such objects; or YAML with top-level request and response keys, or a
// mappings list (in any of its documents).
func (WireMock) Detect(s *Sniff) bool {
	if s.Keys != nil {
		if s.Has("request", "response") {
			return true
		}
		if m, ok := s.Keys["mappings"]; ok {
			t := bytes.TrimSpace(m)
			return len(t) > 0 && t[0] == '['
		}
		return false
	}
	if s.JSONErr != nil {
		return false
	}
	if t := bytes.TrimLeft(s.Data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		// a JSON array of mappings
		var arr []map[string]json.RawMessage
		if json.Unmarshal(t, &arr) != nil || len(arr) == 0 {
			return false
		}
		_, req := arr[0]["request"]
		_, resp := arr[0]["response"]
		return req && resp
	}
	return reWireMockYAMLMaps.Match(s.Data) || (reWireMockYAMLReq.Match(s.Data) && reWireMockYAML.Match(s.Data) &&
		regexp.MustCompile(`(?m)^response:`).Match(s.Data))
}

// Parse implements Format. Every mapping of the file is imported: a file may hold several
// YAML documents (separated by ---), each a mapping, a {mappings: [...]} object or a list of
// mappings; a JSON file may be one mapping, a {"mappings": [...]} object or an array of
// mappings. A mapping that cannot be imported is an error naming its document (when there are
// several) and its index; nothing of the file is imported then.
func (WireMock) Parse(data []byte) (ptrace.Traces, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ptrace.Traces{}, wireMockYAMLError(data, err)
		}
		docs = append(docs, &d)
	}
	var exs []*fixture.Exchange
	for di, doc := range docs {
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			continue // an empty document (a trailing ---): nothing to import
		}
		root := doc.Content[0]
		docWhat := ""
		if len(docs) > 1 {
			docWhat = fmt.Sprintf("document %d of %d, ", di+1, len(docs))
		}
		var maps []*yaml.Node
		prefix := ""
		switch {
		case root.Kind == yaml.SequenceNode:
			maps = root.Content
			prefix = docWhat + "mappings"
		case root.Kind != yaml.MappingNode:
			return ptrace.Traces{}, yamlErr(root, "wiremock %swant an object with request and response, or with mappings, or a list of them; got %s", docWhat, kindName(root))
		case ymGet(root, "mappings") != nil:
			ms := ymGet(root, "mappings")
			if ms.Kind != yaml.SequenceNode {
				return ptrace.Traces{}, yamlErr(ms, "wiremock %smappings: want a list, got %s", docWhat, kindName(ms))
			}
			maps = ms.Content
			prefix = docWhat + "mappings"
		default:
			maps = []*yaml.Node{root}
		}
		for i, m := range maps {
			what := strings.TrimSuffix(docWhat, ", ") + " mapping"
			if prefix != "" {
				what = fmt.Sprintf("%s[%d]", prefix, i)
			}
			ex, err := wireMockExchange(m, strings.TrimSpace(what))
			if err != nil {
				return ptrace.Traces{}, err
			}
			exs = append(exs, ex)
		}
	}
	return cassetteTraces("wiremock", data, exs)
}

func wireMockYAMLError(data []byte, err error) error {
	msg := err.Error()
	if m := regexp.MustCompile(`line (\d+)`).FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ParseError{Line: line, Column: 1, Msg: "wiremock: " + msg, Err: err}
	}
	return &ParseError{Line: 1, Column: 1, Msg: "wiremock: " + msg, Err: err}
}

func wireMockExchange(m *yaml.Node, what string) (*fixture.Exchange, error) {
	if m.Kind != yaml.MappingNode {
		return nil, yamlErr(m, "wiremock %s: want an object, got %s", what, kindName(m))
	}
	req, resp := ymGet(m, "request"), ymGet(m, "response")
	if req == nil || req.Kind != yaml.MappingNode {
		return nil, yamlErr(m, "wiremock %s.request: want an object", what)
	}
	if resp == nil || resp.Kind != yaml.MappingNode {
		return nil, yamlErr(m, "wiremock %s.response: want an object", what)
	}
	ex := &fixture.Exchange{RequestHeader: http.Header{}, ResponseHeader: http.Header{}, Status: 200}
	method := "GET"
	if n := ymGet(req, "method"); n != nil && n.Value != "" && !strings.EqualFold(n.Value, "ANY") {
		method = strings.ToUpper(n.Value)
	}
	ex.Method = method
	path := ""
	for _, k := range []string{"url", "urlPath", "urlPathTemplate", "urlPattern", "urlPathPattern"} {
		if n := ymGet(req, k); n != nil {
			path = n.Value
			break
		}
	}
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse("http://localhost" + path)
	if err != nil {
		return nil, yamlErr(req, "wiremock %s.request.url: %v", what, err)
	}
	if qp := ymGet(req, "queryParameters"); qp != nil && qp.Kind == yaml.MappingNode {
		q := u.Query()
		for i := 0; i+1 < len(qp.Content); i += 2 {
			if v, ok := wireMockEqualTo(qp.Content[i+1]); ok {
				q.Add(qp.Content[i].Value, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	ex.URL = u.String()
	if hs := ymGet(req, "headers"); hs != nil && hs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(hs.Content); i += 2 {
			if v, ok := wireMockEqualTo(hs.Content[i+1]); ok {
				ex.RequestHeader.Add(hs.Content[i].Value, v)
			}
		}
	}
	if bp := ymGet(req, "bodyPatterns"); bp != nil && bp.Kind == yaml.SequenceNode {
		for j, p := range bp.Content {
			pw := fmt.Sprintf("%s.request.bodyPatterns[%d]", what, j)
			if n := ymGet(p, "equalToJson"); n != nil {
				b, err := wireMockJSON(n, pw+".equalToJson")
				if err != nil {
					return nil, err
				}
				ex.RequestBody = b
				if ex.RequestHeader.Get("Content-Type") == "" {
					ex.RequestHeader.Set("Content-Type", "application/json")
				}
				break
			}
			if n := ymGet(p, "equalTo"); n != nil {
				ex.RequestBody = []byte(n.Value)
				break
			}
			if n := ymGet(p, "binaryEqualTo"); n != nil {
				b, err := base64.StdEncoding.DecodeString(n.Value)
				if err != nil {
					return nil, yamlErr(n, "wiremock %s.binaryEqualTo: %v", pw, err)
				}
				ex.RequestBody = b
				break
			}
		}
	}
	if n := ymGet(resp, "status"); n != nil {
		st, err := strconv.Atoi(n.Value)
		if err != nil || st < 100 || st > 999 {
			return nil, yamlErr(n, "wiremock %s.response.status: want an HTTP status, got %q", what, n.Value)
		}
		ex.Status = st
	}
	if hs := ymGet(resp, "headers"); hs != nil {
		if hs.Kind != yaml.MappingNode {
			return nil, yamlErr(hs, "wiremock %s.response.headers: want an object, got %s", what, kindName(hs))
		}
		for i := 0; i+1 < len(hs.Content); i += 2 {
			name, v := hs.Content[i].Value, hs.Content[i+1]
			if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					ex.ResponseHeader.Add(name, e.Value)
				}
			} else {
				ex.ResponseHeader.Add(name, v.Value)
			}
		}
	}
	switch {
	case ymGet(resp, "body") != nil:
		n := ymGet(resp, "body")
		if n.Kind == yaml.ScalarNode {
			ex.ResponseBody = []byte(n.Value)
		} else { // some writers put JSON under body
			b, err := wireMockJSON(n, what+".response.body")
			if err != nil {
				return nil, err
			}
			ex.ResponseBody = b
		}
	case ymGet(resp, "jsonBody") != nil:
		b, err := wireMockJSON(ymGet(resp, "jsonBody"), what+".response.jsonBody")
		if err != nil {
			return nil, err
		}
		ex.ResponseBody = b
		if ex.ResponseHeader.Get("Content-Type") == "" {
			ex.ResponseHeader.Set("Content-Type", "application/json")
		}
	case ymGet(resp, "base64Body") != nil:
		n := ymGet(resp, "base64Body")
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(n.Value))
		if err != nil {
			return nil, yamlErr(n, "wiremock %s.response.base64Body: %v", what, err)
		}
		ex.ResponseBody = b
	case ymGet(resp, "bodyFileName") != nil:
		n := ymGet(resp, "bodyFileName")
		return nil, yamlErr(n, "wiremock %s.response.bodyFileName: the body is in a file under __files (%q), which import does not read; inline it as body or jsonBody", what, n.Value)
	}
	if n := ymGet(resp, "fixedDelayMilliseconds"); n != nil {
		if ms, err := strconv.Atoi(n.Value); err == nil && ms > 0 {
			ex.Start = cassetteNow().UTC().Truncate(time.Millisecond)
			ex.End = ex.Start.Add(time.Duration(ms) * time.Millisecond)
		}
	}
	return ex, nil
}

// wireMockEqualTo reads an exact matcher ({"equalTo": v}, or a plain value).
func wireMockEqualTo(n *yaml.Node) (string, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, true
	case yaml.MappingNode:
		if v := ymGet(n, "equalTo"); v != nil && v.Kind == yaml.ScalarNode {
			return v.Value, true
		}
	}
	return "", false
}

// wireMockJSON encodes n as compact JSON in written key order. A string node holding JSON (the
// form WireMock's JSON writer uses for equalToJson) is re-encoded from its text.
func wireMockJSON(n *yaml.Node, what string) ([]byte, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		t := strings.TrimSpace(n.Value)
		if t != "" && (t[0] == '{' || t[0] == '[') {
			var v yaml.Node
			if err := yaml.Unmarshal([]byte(t), &v); err != nil || len(v.Content) == 0 {
				return nil, yamlErr(n, "wiremock %s: not JSON: %v", what, err)
			}
			n = v.Content[0]
		}
	}
	var b bytes.Buffer
	if err := ymCompactJSON(&b, n); err != nil {
		return nil, yamlErr(n, "wiremock %s: %v", what, err)
	}
	return b.Bytes(), nil
}

func ymCompactJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return ymCompactJSON(b, n.Content[0])
	case yaml.AliasNode:
		return ymCompactJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := ymCompactJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := ymCompactJSON(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			b.WriteString(strings.ToLower(n.Value))
		case "!!int", "!!float":
			if json.Valid([]byte(n.Value)) {
				b.WriteString(n.Value)
			} else {
				f, err := strconv.ParseFloat(n.Value, 64)
				if err != nil {
					return fmt.Errorf("number %q", n.Value)
				}
				v, _ := json.Marshal(f)
				b.Write(v)
			}
		default:
			v, _ := json.Marshal(n.Value)
			b.Write(v)
		}
	default:
		return fmt.Errorf("unexpected YAML node")
	}
	return nil
}

// describeUnknown names what content that no format recognised looks like, for the error.
func describeUnknown(data []byte, s *Sniff) string {
	if s.Keys != nil && len(s.Keys) == 0 {
		return "an empty JSON object"
	}
	if s.Keys != nil {
		keys := make([]string, 0, len(s.Keys))
		for k := range s.Keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 8 {
			keys = append(keys[:8], "...")
		}
		return "JSON object with top-level keys " + strings.Join(keys, ", ")
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(t) > 0 && t[0] == '[':
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) == nil {
			if len(arr) > 0 {
				var first map[string]json.RawMessage
				if json.Unmarshal(arr[0], &first) == nil {
					keys := make([]string, 0, len(first))
					for k := range first {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					if len(keys) > 8 {
						keys = append(keys[:8], "...")
					}
					return fmt.Sprintf("JSON array of %d objects, the first with keys %s", len(arr), strings.Join(keys, ", "))
				}
			}
			return fmt.Sprintf("JSON array of %d values", len(arr))
		}
	case len(t) > 0 && t[0] == '<':
		return "XML or HTML"
	}
	var y yaml.Node
	if yaml.Unmarshal(data, &y) == nil && len(y.Content) > 0 {
		switch r := y.Content[0]; r.Kind {
		case yaml.MappingNode:
			var keys []string
			for i := 0; i+1 < len(r.Content); i += 2 {
				keys = append(keys, r.Content[i].Value)
			}
			sort.Strings(keys)
			if len(keys) > 8 {
				keys = append(keys[:8], "...")
			}
			return "YAML mapping with top-level keys " + strings.Join(keys, ", ")
		case yaml.SequenceNode:
			return fmt.Sprintf("YAML list of %d items", len(r.Content))
		}
	}
	line := t
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if len(line) > 60 {
		line = line[:60]
	}
	return fmt.Sprintf("text starting %q", line)
}
