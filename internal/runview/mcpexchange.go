// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/runagainattr"
)

// MCPExchange is one JSON-RPC exchange with an MCP server recorded over stdio (`runagain mcp`,
// fixture.SourceMCPStdio) as the views show it: the request (method, tool name and arguments of
// a tools/call, else its params) and the response (a tools/call result's content items one by
// one and isError, or the JSON-RPC error), with the exact recorded lines (Request, Response).
// JSON values are the recorded bytes (keys in recorded order). MCP's shapes: the Model Context
// Protocol specification, "Tools" (tools/call: params.name, params.arguments; result.content,
// result.isError) and JSON-RPC 2.0 (error.code, error.message).
type MCPExchange struct {
	Node            int    `json:"-"` // index of the exchange's node in View.Nodes
	SpanID          string `json:"span_id"`
	Server          string `json:"server,omitempty"`    // runagain.mcp.server.name (--name)
	Direction       string `json:"direction,omitempty"` // "client": the agent asked; "server": the server did
	Method          string `json:"method"`              // mcp.method.name: "tools/call", "initialize", ...
	Tool            string `json:"tool,omitempty"`      // params.name of a tools/call
	RequestID       string `json:"request_id,omitempty"`
	SessionID       string `json:"session_id,omitempty"`
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Arguments are a tools/call's params.arguments, Params any other request's params (JSON as
	// recorded; "" when absent).
	Arguments string `json:"arguments,omitempty"`
	Params    string `json:"params,omitempty"`
	Request   string `json:"request"`            // the exact request line
	Response  string `json:"response,omitempty"` // the exact response line; "" for a notification
	// Notification: a request without an id (no response is expected).
	Notification bool `json:"notification,omitempty"`
	// Result is the response's result (JSON as recorded); Content its content items in order
	// (tools/call); IsError the result's isError.
	Result  string       `json:"result,omitempty"`
	Content []MCPContent `json:"content,omitempty"`
	IsError bool         `json:"is_error,omitempty"`
	// ErrorCode and ErrorMessage are the JSON-RPC error of the response (ErrorCode "" when none).
	ErrorCode    string        `json:"error_code,omitempty"`
	ErrorMessage string        `json:"error_message,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	// RerunSource is runagain.rerun.source in a replay, rerun or test run: "recording", "live"
	// or "refused"; "" when recorded live.
	RerunSource string `json:"rerun_source,omitempty"`
	// ReadErr says why the exchange's lines could not be read (still offloaded, or not JSON);
	// the fields read before it are kept.
	ReadErr string `json:"read_error,omitempty"`
}

// MCPContent is one item of a tools/call result's content: Text for a "text" item, else the
// item as recorded (JSON) in Raw.
type MCPContent struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	Raw  string `json:"raw,omitempty"`
}

// MCPExchangesOf returns the MCP exchanges node i made, in run order, as ExchangesOf does for
// HTTP exchanges (the node itself when it is one; else those below it whose nearest LLM or tool
// ancestor is node i, and those the counting rule or an inferred link places under it).
func (v *View) MCPExchangesOf(i int) []*MCPExchange {
	var out []*MCPExchange
	for _, j := range v.ExchangeNodes(i) {
		if fixture.IsMCPExchange(v.Nodes[j].Span) {
			out = append(out, v.mcpExchange(j))
		}
	}
	return out
}

// mcpExchange reads node j's span as an MCPExchange.
func (v *View) mcpExchange(j int) *MCPExchange {
	n := v.Nodes[j]
	s := n.Span
	a := s.Attributes()
	mx := &MCPExchange{Node: j, SpanID: n.SpanID(), Server: attr(a, runagainattr.MCPServer), Direction: attr(a, fixture.AttrMCPDirection),
		Method: attr(a, llmhttp.AttrMCPMethodName), RequestID: attr(a, llmhttp.AttrJSONRPCRequestID),
		SessionID: attr(a, llmhttp.AttrMCPSessionID), ProtocolVersion: attr(a, llmhttp.AttrMCPProtocolVersion),
		RerunSource: attr(a, runagainattr.RerunSource)}
	if e := s.EndTimestamp(); e > s.StartTimestamp() {
		mx.Duration = e.AsTime().Sub(s.StartTimestamp().AsTime())
	}
	var errs []string
	line := func(k string) (string, bool) {
		if val, ok := a.Get(k); ok {
			return val.AsString(), true
		}
		if _, ok := a.Get(k + genai.RefSuffix); ok {
			errs = append(errs, fmt.Sprintf("%s is offloaded (%s) and was not fetched", k, k+genai.RefSuffix))
		}
		return "", false
	}
	req, hasReq := line(fixture.AttrMCPRequest)
	resp, hasResp := line(fixture.AttrMCPResponse)
	mx.Request, mx.Response = req, resp
	if hasReq {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(req), &r); err != nil {
			errs = append(errs, fmt.Sprintf("%s is not a JSON-RPC message: %v", fixture.AttrMCPRequest, err))
		} else {
			if mx.Method == "" {
				mx.Method = r.Method
			}
			mx.Notification = len(r.ID) == 0
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if mx.Method == "tools/call" && json.Unmarshal(r.Params, &p) == nil {
				mx.Tool, mx.Arguments = p.Name, string(p.Arguments)
			} else if len(r.Params) > 0 {
				mx.Params = string(r.Params)
			}
		}
	}
	if mx.Tool == "" {
		mx.Tool = genai.ToolName(a)
	}
	if hasResp {
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    json.Number `json:"code"`
				Message string      `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(resp), &r); err != nil {
			errs = append(errs, fmt.Sprintf("%s is not a JSON-RPC message: %v", fixture.AttrMCPResponse, err))
		} else {
			if r.Error != nil {
				mx.ErrorCode, mx.ErrorMessage = r.Error.Code.String(), r.Error.Message
			}
			if len(r.Result) > 0 && string(r.Result) != "null" {
				mx.Result = string(r.Result)
				var res struct {
					Content []json.RawMessage `json:"content"`
					IsError bool              `json:"isError"`
				}
				if json.Unmarshal(r.Result, &res) == nil {
					mx.IsError = res.IsError
					for _, c := range res.Content {
						mx.Content = append(mx.Content, contentItem(c))
					}
				}
			}
		}
	}
	mx.ReadErr = strings.Join(errs, "; ")
	return mx
}

func contentItem(raw json.RawMessage) MCPContent {
	var c struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Type == "text" && c.Text != nil {
		return MCPContent{Type: c.Type, Text: *c.Text}
	}
	return MCPContent{Type: c.Type, Raw: string(raw)}
}
