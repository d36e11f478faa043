// SPDX-License-Identifier: Apache-2.0

// Package mcp is `runagain mcp`: a proxy for MCP servers spoken to over stdio (the Model Context
// Protocol's stdio transport: newline-delimited JSON-RPC 2.0 on the server's stdin and stdout).
// An agent is configured to start `runagain mcp --name NAME -- SERVER ARGS...` instead of the
// server; every line passes through unchanged, and every exchange (a request with its response,
// a notification, a server-initiated request) becomes one span of the caller's run.
//
// Span shape (MCP semantic conventions, gen-ai/mcp.md; GenAI tool attributes for tools/call):
//
//	name                        "{mcp.method.name} {target}": "tools/call append_note", "initialize"
//	kind                        CLIENT (the agent's request), SERVER (a request of the server)
//	mcp.method.name             "tools/call"
//	mcp.session.id              one id per `runagain mcp` process (the stdio session)
//	mcp.protocol.version        negotiated by initialize ("2025-06-18")
//	jsonrpc.request.id          the request's id as text
//	jsonrpc.protocol.version    "2.0"
//	network.transport           "pipe"
//	gen_ai.operation.name       "execute_tool" (tools/call)
//	gen_ai.tool.name            params.name (tools/call)
//	gen_ai.tool.call.arguments  params.arguments, JSON (tools/call)
//	gen_ai.tool.call.result     result, or the JSON-RPC error, JSON (tools/call)
//	gen_ai.prompt.name, mcp.resource.uri   prompts/get, resources/read targets
//	rpc.response.status_code, error.type   a JSON-RPC error's code; error.type "tool_error" for isError
//	runagain.mcp.request        the exact request line (payload: offloaded, redacted)
//	runagain.mcp.response       the exact response line (absent for a notification)
//	runagain.mcp.server.name    --name
//	runagain.mcp.direction      "client" or "server": who sent the request
//	runagain.fixture.source     "mcp_stdio"; runagain.fixture.index: position in the session
//	runagain.genai.derived      true: the GenAI attributes were read from the messages
//	runagain.rerun.source       in a rerun or test run: "recording", "live" or "refused"
//
// Spans join the caller's trace from TRACEPARENT (set by `runagain proxy --record`, `replay`,
// `rerun` and `test`); without it a session is a trace of its own under a root span
// "runagain mcp NAME".
//
// The runagain command an agent runs under starts a Broker (a Unix socket named by
// RUNAGAIN_MCP_BROKER) that `runagain mcp` finds in its environment or its ancestors'. Recording,
// the broker relays the spans to the collector; in replay it answers each request from the
// recorded exchanges of the server (matched like the HTTP replay: the JSON-RPC id left out,
// values redacted, the rest compared as JSON), so the server is not started. A request that
// matches nothing gets a JSON-RPC error naming the field (expected and got), is recorded as a
// divergence and fails the command; an unrecorded tools/call goes live only with
// --allow-live-writes SERVER, other requests with --allow-mcp SERVER (the side-effect firewall).
package mcp
