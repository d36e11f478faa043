package importer

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	yaml "go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/pyjson"
)

// VCRPy reads VCR.py YAML cassettes ("interactions: - request: {method, uri, headers, body}
// response: {status: {code, message}, headers, body: {string}}"), including bodies stored as
// gzip `!!binary`, and pydantic-ai's serializer variant where a JSON body is stored as decoded
// YAML under `parsed_body` (re-encoded here exactly as pydantic-ai's deserializer does,
// Python's json.dumps with its default separators and ensure_ascii). pydantic-ai's xAI gRPC
// sample files ("request_sample"/"response_sample" with a protobuf `raw`) import as exchanges
// with method "POST" and url "grpc+sample://xai/" (not replayable over HTTP).
type VCRPy struct{}

// GoVCR reads go-vcr v2 cassettes ("version: 2", interactions with request.url, request.form,
// response.code, response.duration).
type GoVCR struct{}

var (
	reInteractions = regexp.MustCompile(`(?m)^interactions:`)
	reVersion2     = regexp.MustCompile(`(?m)^version: *2\s*$`)
)

// Name implements Format.
func (VCRPy) Name() string { return "vcrpy" }

// Detect implements Format: YAML with a top-level interactions list, not go-vcr's version 2.
func (VCRPy) Detect(s *Sniff) bool {
	return s.Keys == nil && reInteractions.Match(s.Data) && !reVersion2.Match(s.Data)
}

// Name implements Format.
func (GoVCR) Name() string { return "go-vcr" }

// Detect implements Format: YAML with "version: 2" and a top-level interactions list.
func (GoVCR) Detect(s *Sniff) bool {
	return s.Keys == nil && reInteractions.Match(s.Data) && reVersion2.Match(s.Data)
}

// yamlErr positions a problem at node n.
func yamlErr(n *yaml.Node, format string, args ...any) *ParseError {
	e := &ParseError{Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// parseYAMLDoc decodes data into its root mapping node.
func parseYAMLDoc(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		pe := &ParseError{Msg: "YAML: " + err.Error(), Err: err, Line: 1, Column: 1}
		var line int
		if _, e := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); e == nil {
			pe.Line = line
		}
		return nil, pe
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, yamlErr(&doc, "cassette: expected a YAML mapping at the top")
	}
	return doc.Content[0], nil
}

// ymGet returns the value of key in mapping n, or nil.
func ymGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

func isNullNode(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Style == 0 && (n.Tag == "!!null" || n.Value == "~" || n.Value == "null" || n.Value == ""))
}

// ymBytes reads a scalar as bytes: !!binary is base64-decoded, anything else is its text.
func ymBytes(n *yaml.Node, what string) ([]byte, error) {
	if isNullNode(n) {
		return nil, nil
	}
	if n.Kind != yaml.ScalarNode {
		return nil, yamlErr(n, "%s: expected a string, got a %s", what, kindName(n))
	}
	if n.Tag == "!!binary" {
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, n.Value)
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, yamlErr(n, "%s: invalid !!binary base64: %v", what, err)
		}
		return b, nil
	}
	return []byte(n.Value), nil
}

func ymString(n *yaml.Node, what string) (string, error) {
	b, err := ymBytes(n, what)
	return string(b), err
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

// ymHeaders reads {Name: [v, ...]} or {Name: v}.
func ymHeaders(n *yaml.Node, what string) (http.Header, error) {
	h := http.Header{}
	if isNullNode(n) {
		return h, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, yamlErr(n, "%s: expected a mapping of header names to values", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, v := n.Content[i].Value, n.Content[i+1]
		switch v.Kind {
		case yaml.SequenceNode:
			for _, e := range v.Content {
				s, err := ymString(e, what+"."+name)
				if err != nil {
					return nil, err
				}
				headerAdd(h, name, s)
			}
		case yaml.ScalarNode:
			s, err := ymString(v, what+"."+name)
			if err != nil {
				return nil, err
			}
			headerAdd(h, name, s)
		default:
			return nil, yamlErr(v, "%s.%s: expected a list of strings", what, name)
		}
	}
	return h, nil
}

func ymInteractions(root *yaml.Node) ([]*yaml.Node, error) {
	it := ymGet(root, "interactions")
	if it == nil {
		return nil, yamlErr(root, "cassette: no interactions list")
	}
	if isNullNode(it) {
		return nil, nil
	}
	if it.Kind != yaml.SequenceNode {
		return nil, yamlErr(it, "interactions: expected a list")
	}
	return it.Content, nil
}

// Parse implements Format.
func (VCRPy) Parse(data []byte) (ptrace.Traces, error) {
	root, err := parseYAMLDoc(data)
	if err != nil {
		return ptrace.Traces{}, err
	}
	its, err := ymInteractions(root)
	if err != nil {
		return ptrace.Traces{}, err
	}
	source := "vcrpy"
	var exs []*fixture.Exchange
	for i, it := range its {
		what := fmt.Sprintf("interactions[%d]", i)
		if it.Kind != yaml.MappingNode {
			return ptrace.Traces{}, yamlErr(it, "%s: expected a mapping", what)
		}
		if ymGet(it, "request_sample") != nil {
			ex, err := xaiSample(it, what)
			if err != nil {
				return ptrace.Traces{}, err
			}
			source = "vcrpy-pydantic-xai"
			exs = append(exs, ex)
			continue
		}
		req, resp := ymGet(it, "request"), ymGet(it, "response")
		if req == nil || req.Kind != yaml.MappingNode {
			return ptrace.Traces{}, yamlErr(it, "%s.request: missing or not a mapping", what)
		}
		ex, err := ymRequest(req, "uri", what)
		if err != nil {
			return ptrace.Traces{}, err
		}
		if pb := ymGet(req, "parsed_body"); pb != nil && !isNullNode(pb) {
			source = "vcrpy-pydantic"
			ex.RequestBody = pyjson.Dumps(pb)
		} else if ex.RequestBody, err = vcrBody(ymGet(req, "body"), what+".request.body"); err != nil {
			return ptrace.Traces{}, err
		}
		if resp == nil || resp.Kind != yaml.MappingNode {
			return ptrace.Traces{}, yamlErr(it, "%s.response: missing or not a mapping", what)
		}
		st := ymGet(resp, "status")
		code := ymGet(st, "code")
		if code == nil && st != nil && st.Kind == yaml.ScalarNode {
			code = st // some writers store the bare code
		}
		if code == nil {
			code = ymGet(resp, "status_code") // httpx-style writers: status_code, content, http_version
		}
		if code == nil || code.Kind != yaml.ScalarNode {
			return ptrace.Traces{}, yamlErr(resp, "%s.response.status.code: missing", what)
		}
		if ex.Status, err = strconv.Atoi(code.Value); err != nil || ex.Status < 100 || ex.Status > 999 {
			return ptrace.Traces{}, yamlErr(code, "%s.response.status.code: %q is not an HTTP status", what, code.Value)
		}
		if ex.ResponseHeader, err = ymHeaders(ymGet(resp, "headers"), what+".response.headers"); err != nil {
			return ptrace.Traces{}, err
		}
		if pb := ymGet(resp, "parsed_body"); pb != nil && !isNullNode(pb) {
			source = "vcrpy-pydantic"
			ex.ResponseBody = pyjson.Dumps(pb)
		} else if c := ymGet(resp, "content"); c != nil && ymGet(resp, "body") == nil {
			if ex.ResponseBody, err = ymBytes(c, what+".response.content"); err != nil {
				return ptrace.Traces{}, err
			}
		} else if ex.ResponseBody, err = vcrBody(ymGet(resp, "body"), what+".response.body"); err != nil {
			return ptrace.Traces{}, err
		}
		exs = append(exs, ex)
	}
	for _, ex := range exs {
		ex.Source = source
	}
	return cassetteTraces(source, data, exs), nil
}

// ymRequest reads the method, URL (under urlKey) and headers of a cassette request mapping;
// what names the interaction in errors.
func ymRequest(req *yaml.Node, urlKey, what string) (*fixture.Exchange, error) {
	ex := &fixture.Exchange{}
	var err error
	if ex.Method, err = ymString(ymGet(req, "method"), what+".request.method"); err != nil {
		return nil, err
	}
	if ex.URL, err = ymString(ymGet(req, urlKey), what+".request."+urlKey); err != nil {
		return nil, err
	}
	if ex.Method == "" || ex.URL == "" {
		return nil, yamlErr(req, "%s.request: method and %s are required", what, urlKey)
	}
	if ex.RequestHeader, err = ymHeaders(ymGet(req, "headers"), what+".request.headers"); err != nil {
		return nil, err
	}
	return ex, nil
}

// vcrBody reads a VCR.py body: a scalar (string or !!binary), or a mapping {string: ...}.
func vcrBody(n *yaml.Node, what string) ([]byte, error) {
	if n != nil && n.Kind == yaml.MappingNode {
		if s := ymGet(n, "string"); s != nil {
			return ymBytes(s, what+".string")
		}
		if pb := ymGet(n, "parsed_body"); pb != nil {
			return pyjson.Dumps(pb), nil
		}
		return nil, nil
	}
	return ymBytes(n, what)
}

// xaiSample reads one pydantic-ai xAI gRPC sample: request_sample/response_sample with the
// protobuf message in raw (!!binary) and its JSON view in json.
func xaiSample(it *yaml.Node, what string) (*fixture.Exchange, error) {
	ex := &fixture.Exchange{Method: "POST", URL: "grpc+sample://xai/", Status: 200,
		RequestHeader: http.Header{"Content-Type": {"application/grpc"}}, ResponseHeader: http.Header{"Content-Type": {"application/grpc"}}}
	var err error
	if ex.RequestBody, err = ymBytes(ymGet(ymGet(it, "request_sample"), "raw"), what+".request_sample.raw"); err != nil {
		return nil, err
	}
	if ex.ResponseBody, err = ymBytes(ymGet(ymGet(it, "response_sample"), "raw"), what+".response_sample.raw"); err != nil {
		return nil, err
	}
	return ex, nil
}

// Parse implements Format.
func (GoVCR) Parse(data []byte) (ptrace.Traces, error) {
	root, err := parseYAMLDoc(data)
	if err != nil {
		return ptrace.Traces{}, err
	}
	its, err := ymInteractions(root)
	if err != nil {
		return ptrace.Traces{}, err
	}
	var exs []*fixture.Exchange
	var at time.Time
	for i, it := range its {
		what := fmt.Sprintf("interactions[%d]", i)
		req, resp := ymGet(it, "request"), ymGet(it, "response")
		if req == nil || req.Kind != yaml.MappingNode || resp == nil || resp.Kind != yaml.MappingNode {
			return ptrace.Traces{}, yamlErr(it, "%s: request and response mappings are required", what)
		}
		ex, err := ymRequest(req, "url", what)
		if err != nil {
			return ptrace.Traces{}, err
		}
		if ex.RequestBody, err = ymBytes(ymGet(req, "body"), what+".request.body"); err != nil {
			return ptrace.Traces{}, err
		}
		if p, _ := ymString(ymGet(req, "proto"), ""); strings.HasPrefix(p, "HTTP/") {
			ex.Protocol = strings.TrimSuffix(strings.TrimPrefix(p, "HTTP/"), ".0")
		}
		code := ymGet(resp, "code")
		if code == nil || code.Kind != yaml.ScalarNode {
			return ptrace.Traces{}, yamlErr(resp, "%s.response.code: missing", what)
		}
		if ex.Status, err = strconv.Atoi(code.Value); err != nil || ex.Status < 100 || ex.Status > 999 {
			return ptrace.Traces{}, yamlErr(code, "%s.response.code: %q is not an HTTP status", what, code.Value)
		}
		if ex.ResponseHeader, err = ymHeaders(ymGet(resp, "headers"), what+".response.headers"); err != nil {
			return ptrace.Traces{}, err
		}
		if ex.ResponseBody, err = ymBytes(ymGet(resp, "body"), what+".response.body"); err != nil {
			return ptrace.Traces{}, err
		}
		if u := ymGet(resp, "uncompressed"); u != nil && u.Value == "true" {
			// go-vcr stored the body after Go's transport removed the gzip encoding.
			if enc := ex.ResponseHeader.Get("Content-Encoding"); enc != "" {
				ex.DecodedEncoding = strings.ToLower(enc)
			}
		}
		if at.IsZero() {
			at = cassetteNow().UTC().Truncate(time.Millisecond)
		}
		ex.Start = at
		if d := ymGet(resp, "duration"); d != nil && d.Kind == yaml.ScalarNode {
			if dur, err := time.ParseDuration(d.Value); err == nil && dur >= 0 {
				ex.End = ex.Start.Add(dur)
			}
		}
		if ex.End.IsZero() {
			ex.End = ex.Start
		}
		at = ex.End.Add(time.Millisecond)
		exs = append(exs, ex)
	}
	return cassetteTraces("go-vcr", data, exs), nil
}
