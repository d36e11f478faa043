// SPDX-License-Identifier: Apache-2.0

package llmhttp

import (
	"bytes"
	"encoding/json"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// isMCPToolsCall tells whether a request body is a JSON-RPC 2.0 request with method tools/call
// (the Model Context Protocol's streamable HTTP transport posts one message per request).
func isMCPToolsCall(body []byte) bool {
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	m := decode(body)
	return m != nil && str(m["jsonrpc"]) == "2.0" && str(m["method"]) == "tools/call"
}

// mcpToolsCall reads an MCP tools/call over streamable HTTP: the tool name and arguments from the
// request, the result (or JSON-RPC error) from the response message with the request's id, sent
// as JSON or as an SSE event. Attributes follow the MCP semantic conventions (mcp.method.name,
// mcp.session.id, mcp.protocol.version, jsonrpc.request.id, rpc.response.status_code) and the
// GenAI tool attributes (gen_ai.operation.name execute_tool, gen_ai.tool.name,
// gen_ai.tool.call.arguments, gen_ai.tool.call.result). A result with isError true, or a JSON-RPC
// error, sets error.type ("tool_error", or the error code).
func mcpToolsCall(c *call, ex *fixture.Exchange) {
	req := decode(ex.RequestBody)
	if req == nil {
		return
	}
	c.str(genai.AttrOperationName, OperationExecuteTool)
	c.str(AttrMCPMethodName, "tools/call")
	params := obj(req["params"])
	c.str(genai.AttrToolName, str(params["name"]))
	if args, ok := params["arguments"]; ok {
		c.str(genai.AttrToolCallArguments, marshal(args))
	}
	id := rpcID(req["id"])
	c.str(AttrJSONRPCRequestID, id)
	c.str(AttrMCPSessionID, ex.RequestHeader.Get("Mcp-Session-Id"))
	c.str(AttrMCPProtocolVersion, ex.RequestHeader.Get("Mcp-Protocol-Version"))
	if ex.Status < 200 || ex.Status >= 300 {
		return
	}
	var msgs []map[string]any
	if isSSE(ex) {
		msgs = sseJSON(ex.ResponseBody)
	} else if m := decode(ex.ResponseBody); m != nil {
		msgs = []map[string]any{m}
	} else {
		var batch []map[string]any
		dec := json.NewDecoder(bytes.NewReader(ex.ResponseBody))
		dec.UseNumber()
		if dec.Decode(&batch) == nil {
			msgs = batch
		}
	}
	for _, m := range msgs {
		if rpcID(m["id"]) != id || (m["result"] == nil && m["error"] == nil) {
			continue // notifications and progress messages on the stream
		}
		if res := obj(m["result"]); res != nil {
			c.str(genai.AttrToolCallResult, marshal(res))
			if b, _ := res["isError"].(bool); b {
				c.str(genai.AttrErrorType, "tool_error")
			}
		}
		if e := obj(m["error"]); e != nil {
			code := str(e["code"])
			c.str(AttrRPCResponseStatus, code)
			c.str(genai.AttrErrorType, code)
			c.str(genai.AttrToolCallResult, marshal(e))
		}
		break
	}
}

// rpcID renders a JSON-RPC id (string or number) as text.
func rpcID(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}
