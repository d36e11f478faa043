// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/runagain/runagain/internal/fixture"
)

// JSON-RPC 2.0 (MCP's streamable HTTP transport): the request "id" is chosen by the client and
// changes from run to run, so replay matching leaves it out (Normalizer) and the recorded
// response is served with the live request's id in place of the recorded one (rpcExchange).

// rpcRequestID returns the compact literal of a JSON-RPC 2.0 request's id ("3", "\"abc\"") and
// the request without it, when v is such a request (an object with jsonrpc "2.0" and a method).
func rpcRequestID(v any) (id string, rest any, ok bool) {
	m, isObj := v.(map[string]any)
	if !isObj || m["jsonrpc"] != "2.0" {
		return "", v, false
	}
	if _, hasMethod := m["method"]; !hasMethod {
		return "", v, false
	}
	raw, present := m["id"]
	if !present {
		return "", v, false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", v, false
	}
	c := make(map[string]any, len(m))
	for k, x := range m {
		if k != "id" {
			c[k] = x
		}
	}
	return string(b), c, true
}

// rpcExchange returns ex with the JSON-RPC response messages that answer the recorded request's
// id rewritten to answer the live request's id (JSON body, or each SSE event's data line); other
// bytes are unchanged and SSE chunk offsets follow. ex itself is returned when there is nothing
// to rewrite.
func rpcExchange(ex *fixture.Exchange, rec, live *request) *fixture.Exchange {
	if rec == nil || live == nil || rec.rpcID == "" || live.rpcID == "" || rec.rpcID == live.rpcID || len(ex.ResponseBody) == 0 {
		return ex
	}
	body := ex.ResponseBody
	if len(ex.Chunks) == 0 {
		nb, changed := replaceTopLevelID(body, rec.rpcID, live.rpcID)
		if !changed {
			return ex
		}
		c := *ex
		c.ResponseBody = nb
		return &c
	}
	var out bytes.Buffer
	chunks := make([]fixture.Chunk, 0, len(ex.Chunks))
	changed := false
	for _, ch := range ex.Chunks {
		ev := body[ch.Offset : ch.Offset+ch.Size]
		var nev []byte
		for _, line := range bytes.SplitAfter(ev, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("data:")) {
				prefix := 5
				if len(line) > 5 && line[5] == ' ' {
					prefix = 6
				}
				if nl, ok := replaceTopLevelID(line[prefix:], rec.rpcID, live.rpcID); ok {
					line = append(append([]byte{}, line[:prefix]...), nl...)
					changed = true
				}
			}
			nev = append(nev, line...)
		}
		chunks = append(chunks, fixture.Chunk{Offset: out.Len(), Size: len(nev), Time: ch.Time})
		out.Write(nev)
	}
	if !changed {
		return ex
	}
	c := *ex
	c.ResponseBody = out.Bytes()
	c.Chunks = chunks
	return &c
}

// replaceTopLevelID replaces the value of the top-level "id" key of the JSON object at the start
// of b (after spaces) when it equals from (a compact JSON literal), keeping every other byte.
func replaceTopLevelID(b []byte, from, to string) ([]byte, bool) {
	trimmed := bytes.TrimLeft(b, " \t")
	lead := len(b) - len(trimmed)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return b, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil { // {
		return b, false
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return b, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return b, false
		}
		if k, _ := kt.(string); k == "id" {
			end := int(dec.InputOffset())
			start := end - len(raw)
			var v any
			if json.Unmarshal(raw, &v) != nil {
				return b, false
			}
			cb, _ := json.Marshal(v)
			if string(cb) != from || !strings.HasPrefix(string(trimmed[start:end]), string(raw)) {
				return b, false
			}
			out := make([]byte, 0, len(b)+len(to))
			out = append(out, b[:lead+start]...)
			out = append(out, to...)
			out = append(out, b[lead+end:]...)
			return out, true
		}
	}
	return b, false
}
