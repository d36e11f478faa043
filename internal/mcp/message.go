// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"bytes"
	"encoding/json"
)

// kind is what a JSON-RPC 2.0 message is (JSON-RPC 2.0 specification, section 4-5).
type kind int

const (
	kindInvalid      kind = iota // not a JSON-RPC 2.0 object (passed through unchanged, counted)
	kindRequest                  // method and id: expects a response
	kindNotification             // method, no id
	kindResponse                 // id and result or error, no method
)

// message is one line of the stdio transport, decoded just enough to pair requests with
// responses; raw keeps its exact bytes (without the line terminator).
type message struct {
	raw    []byte
	kind   kind
	id     string // compact JSON literal of the id ("3", "\"a\""); empty for notifications
	method string
	params json.RawMessage
	result json.RawMessage
	err    json.RawMessage
}

// parse decodes one line. A batch (a JSON array, allowed by MCP 2025-03-26 and removed in
// 2025-06-18) and anything else that is not a JSON-RPC 2.0 object is kindInvalid.
func parse(line []byte) *message {
	m := &message{raw: line}
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return m
	}
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(t, &v) != nil || v.JSONRPC != "2.0" {
		return m
	}
	if len(v.ID) > 0 && !bytes.Equal(v.ID, []byte("null")) {
		var c bytes.Buffer
		if json.Compact(&c, v.ID) == nil {
			m.id = c.String()
		}
	}
	m.method, m.params, m.result, m.err = v.Method, v.Params, v.Result, v.Error
	switch {
	case m.method != "" && m.id != "":
		m.kind = kindRequest
	case m.method != "":
		m.kind = kindNotification
	case m.id != "" && (len(m.result) > 0 || len(m.err) > 0):
		m.kind = kindResponse
	}
	return m
}

// param returns the string value of a top-level member of params ("name", "uri").
func (m *message) param(key string) string {
	var p map[string]json.RawMessage
	if json.Unmarshal(m.params, &p) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(p[key], &s) != nil {
		return ""
	}
	return s
}

// rawParam returns the raw JSON of a top-level member of params (nil when absent).
func (m *message) rawParam(key string) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(m.params, &p) != nil {
		return nil
	}
	return p[key]
}

// errorResponse is a JSON-RPC error response to the request with id (a compact literal).
func errorResponse(id string, code int, text string, data map[string]string) []byte {
	if id == "" {
		id = "null"
	}
	e := map[string]any{"code": code, "message": text}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": e})
	return b
}

// JSON-RPC error codes runagain answers with (the implementation-defined server-error range
// -32000..-32099 of JSON-RPC 2.0, section 5.1).
const (
	// CodeDivergence: the request matches no recorded one (data: field, expected, got).
	CodeDivergence = -32001
	// CodeRefused: the side-effect firewall refused an unrecorded tools/call.
	CodeRefused = -32003
	// CodeUnavailable: the server could not be started or stopped answering.
	CodeUnavailable = -32004
)
