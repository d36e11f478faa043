// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	yaml "go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/fixture"
)

// GoVCR reads go-vcr v2 cassettes ("version: 2", interactions with request.url, request.form,
// response.code, response.duration).
type GoVCR struct{}

// Name implements Format.
func (GoVCR) Name() string { return "go-vcr" }

// Detect implements Format: YAML with "version: 2" and a top-level interactions list.
func (GoVCR) Detect(s *Sniff) bool {
	return s.Keys == nil && reInteractions.Match(s.Data) && reVersion2.Match(s.Data)
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
	return cassetteTraces("go-vcr", data, exs)
}
