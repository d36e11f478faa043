// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"fmt"
	"net/http"
	"strconv"

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

// Name implements Format.
func (VCRPy) Name() string { return "vcrpy" }

// Detect implements Format: YAML with a top-level interactions list, not go-vcr's version 2.
func (VCRPy) Detect(s *Sniff) bool {
	return s.Keys == nil && reInteractions.Match(s.Data) && !reVersion2.Match(s.Data)
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
	return cassetteTraces(source, data, exs)
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
