// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/runagainattr"
)

// Attributes of an MCP exchange span beyond the MCP and GenAI semantic conventions (the package
// comment lists them all).
const (
	// Source is the runagain.fixture.source of an exchange recorded over stdio.
	Source = fixture.SourceMCPStdio
	// AttrServer is the --name of the server the exchange went to.
	AttrServer = runagainattr.MCPServer
	// AttrRequest and AttrResponse hold the exact JSON-RPC messages (one stdio line each, without
	// the newline); payload attributes, offloaded and redacted like any other.
	AttrRequest  = fixture.AttrMCPRequest
	AttrResponse = fixture.AttrMCPResponse
	// AttrDirection says who sent the request: "client" (the agent) or "server".
	AttrDirection = fixture.AttrMCPDirection
	// AttrResourceURI and AttrPromptName are the MCP semantic conventions' targets of
	// resources/* and prompts/get.
	AttrResourceURI = "mcp.resource.uri"
	AttrPromptName  = "gen_ai.prompt.name"
	AttrTransport   = "network.transport"
	// AttrRerunSource is set on the exchanges of a replay, rerun or test run: "recording"
	// (served from the recording), "live" (sent to the real server) or "refused"; the same
	// attribute as the HTTP exchanges of a rerun.
	AttrRerunSource = runagainattr.RerunSource
	// AttrRerunOriginalSpan is the recorded exchange a "recording" exchange served.
	AttrRerunOriginalSpan = "runagain.rerun.original_span_id"
)

// BodyKeys are the attributes holding payloads; they belong in payload_offload's default keys.
var BodyKeys = []string{AttrRequest, AttrResponse}

// Exchange is one recorded JSON-RPC exchange: a request and its response, or a notification
// (Response nil).
type Exchange struct {
	Server    string
	Direction string // "client" or "server"
	Request   []byte
	Response  []byte
	Start     time.Time
	End       time.Time
	Index     int
	// SessionID and ProtocolVersion are those of the stdio session (mcp.session.id: one per
	// `runagain mcp` process; mcp.protocol.version: negotiated by initialize).
	SessionID       string
	ProtocolVersion string
	// Source and OriginalSpan: see AttrRerunSource; empty when recording.
	Source       string
	OriginalSpan pcommon.SpanID
}

// IsExchange reports whether a span is an MCP stdio exchange.
func IsExchange(sp ptrace.Span) bool { return fixture.IsMCPExchange(sp) }

// ToSpan fills sp (ids and parent set by the caller) with the exchange: name
// "{mcp.method.name} {target}", kind CLIENT for the agent's requests (SERVER for the server's),
// the MCP semantic conventions and, for tools/call, the GenAI tool attributes.
func (e *Exchange) ToSpan(sp ptrace.Span) {
	req := parse(e.Request)
	sp.SetKind(ptrace.SpanKindClient)
	if e.Direction == "server" {
		sp.SetKind(ptrace.SpanKindServer)
	}
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(e.Start))
	end := e.End
	if end.Before(e.Start) {
		end = e.Start
	}
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	a := sp.Attributes()
	a.PutStr(fixture.AttrSource, Source)
	a.PutInt(fixture.AttrIndex, int64(e.Index))
	a.PutStr(AttrServer, e.Server)
	a.PutStr(AttrDirection, e.Direction)
	a.PutStr(AttrTransport, "pipe")
	a.PutStr(llmhttp.AttrJSONRPCVersion, "2.0")
	a.PutStr(llmhttp.AttrMCPMethodName, req.method)
	if e.SessionID != "" {
		a.PutStr(llmhttp.AttrMCPSessionID, e.SessionID)
	}
	if e.ProtocolVersion != "" {
		a.PutStr(llmhttp.AttrMCPProtocolVersion, e.ProtocolVersion)
	}
	if req.id != "" {
		a.PutStr(llmhttp.AttrJSONRPCRequestID, idText(req.id))
	}
	a.PutStr(AttrRequest, string(e.Request))
	if e.Response != nil {
		a.PutStr(AttrResponse, string(e.Response))
	}
	if e.Source != "" {
		a.PutStr(AttrRerunSource, e.Source)
	}
	if !e.OriginalSpan.IsEmpty() {
		a.PutStr(AttrRerunOriginalSpan, e.OriginalSpan.String())
	}
	name := req.method
	switch req.method {
	case "tools/call":
		tool := req.param("name")
		name += " " + tool
		a.PutStr(genai.AttrOperationName, llmhttp.OperationExecuteTool)
		a.PutStr(genai.AttrToolName, tool)
		if args := req.rawParam("arguments"); args != nil {
			a.PutStr(genai.AttrToolCallArguments, string(args))
		}
		a.PutBool(genai.AttrDerived, true)
	case "prompts/get":
		if p := req.param("name"); p != "" {
			name += " " + p
			a.PutStr(AttrPromptName, p)
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if u := req.param("uri"); u != "" {
			name += " " + u
			a.PutStr(AttrResourceURI, u)
		}
	}
	sp.SetName(strings.TrimSpace(name))
	if e.Response == nil {
		return
	}
	resp := parse(e.Response)
	if len(resp.err) > 0 {
		var je struct {
			Code    json.Number `json:"code"`
			Message string      `json:"message"`
		}
		_ = json.Unmarshal(resp.err, &je)
		a.PutStr(llmhttp.AttrRPCResponseStatus, je.Code.String())
		a.PutStr(genai.AttrErrorType, je.Code.String())
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(je.Message)
		if req.method == "tools/call" {
			a.PutStr(genai.AttrToolCallResult, string(resp.err))
		}
		return
	}
	if req.method == "tools/call" && len(resp.result) > 0 {
		a.PutStr(genai.AttrToolCallResult, string(resp.result))
		var r struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(resp.result, &r) == nil && r.IsError {
			a.PutStr(genai.AttrErrorType, "tool_error")
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
}

// FromSpan reads an exchange back from a span written by ToSpan (offloaded attributes must have
// been rehydrated); ok is false for any other span.
func FromSpan(sp ptrace.Span) (*Exchange, bool) {
	if !IsExchange(sp) {
		return nil, false
	}
	a := sp.Attributes()
	get := func(k string) string {
		if v, ok := a.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	e := &Exchange{Server: get(AttrServer), Direction: get(AttrDirection), Request: []byte(get(AttrRequest)),
		Start: sp.StartTimestamp().AsTime(), End: sp.EndTimestamp().AsTime(),
		SessionID: get(llmhttp.AttrMCPSessionID), ProtocolVersion: get(llmhttp.AttrMCPProtocolVersion), Source: get(AttrRerunSource)}
	if v, ok := a.Get(AttrResponse); ok {
		e.Response = []byte(v.AsString())
	}
	if v, ok := a.Get(fixture.AttrIndex); ok {
		e.Index = int(v.Int())
	}
	return e, true
}

// idText renders a compact JSON id literal as text (a string id without its quotes).
func idText(id string) string {
	var s string
	if json.Unmarshal([]byte(id), &s) == nil {
		return s
	}
	return id
}
