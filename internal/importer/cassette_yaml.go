// SPDX-License-Identifier: Apache-2.0

// YAML cassettes: VCR.py's (vcrpy.go) and go-vcr's (govcr.go). This file holds what both read
// with: detection patterns, positioned errors and the YAML node helpers.

package importer

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/fixture"
)

// A YAML cassette has a top-level interactions list; go-vcr's says "version: 2".
var (
	reInteractions = regexp.MustCompile(`(?m)^interactions:`)
	reVersion2     = regexp.MustCompile(`(?m)^version: *2\s*$`)
)

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
