// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
)

// printStep prints the step: system instructions, tool definitions, input and output messages,
// each list labelled with the form it was read from. Text is printed as recorded.
func printStep(w io.Writer, in *runview.StepInput, asJSON bool) error {
	if asJSON {
		return printJSON(w, in)
	}
	m := in.Messages
	fmt.Fprintf(w, "step %d of %d: %s (span %s, model %s)\n", in.Step, in.Steps, in.Name, in.SpanID, dash(in.Model))
	if m.Derived {
		fmt.Fprintln(w, "(GenAI attributes derived by runagain from the recorded HTTP exchange: runagain.genai.derived)")
	}
	if in.MessagesError != "" {
		fmt.Fprintf(w, "warning: %s\n", in.MessagesError)
	}
	if len(m.SystemInstructions) > 0 {
		fmt.Fprintf(w, "\n=== system instructions\n")
		printParts(w, m.SystemInstructions)
	}
	if m.ToolDefinitions != nil {
		b, err := json.MarshalIndent(m.ToolDefinitions, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n=== tool definitions\n%s\n", b)
	}
	printMessages(w, "input", m.Input, m.InputSource, m.UnreadAttr("input"), unreadReason(m, "input"))
	printMessages(w, "output", m.Output, m.OutputSource, m.UnreadAttr("output"), unreadReason(m, "output"))
	for _, u := range m.Unread {
		if _, listed := in.Raw[u.Attribute]; !listed && u.Side == "output" {
			fmt.Fprintf(w, "\n=== %s (as recorded)\n%s\n", u.Attribute, in.Unread[u.Attribute])
		}
	}
	if (m.InputSource == "" && m.OutputSource == "" || len(m.Unread) > 0) && len(in.Keys) > 0 {
		fmt.Fprintln(w, "\nattributes recorded as input (no known message form):")
		for _, k := range in.Keys {
			fmt.Fprintf(w, "\n=== %s\n%s\n", k, in.Raw[k])
		}
	}
	printExchanges(w, in.Exchanges)
	printMCPExchanges(w, in.MCPExchanges)
	return nil
}

// printToolStep prints a tool call: its arguments and result as recorded, then the exchanges
// it made.
func printToolStep(w io.Writer, in *runview.ToolInput, asJSON bool) error {
	if asJSON {
		return printJSON(w, in)
	}
	fmt.Fprintf(w, "tool call %d of %d: %s (span %s)\n", in.Step, in.Steps, in.Name, in.SpanID)
	if in.Error != "" {
		fmt.Fprintf(w, "error: %s\n", in.Error)
	}
	fmt.Fprintf(w, "\n=== arguments\n%s\n", orNotRecorded(in.Arguments))
	fmt.Fprintf(w, "\n=== result\n%s\n", orNotRecorded(in.Result))
	printExchanges(w, in.Exchanges)
	printMCPExchanges(w, in.MCPExchanges)
	return nil
}

func orNotRecorded(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// printMCPExchanges prints the MCP exchanges of a step: the request (method, tool, arguments)
// and the response (content items one by one, isError, or the JSON-RPC error), each followed
// by its exact JSON-RPC line as recorded.
func printMCPExchanges(w io.Writer, exs []*runview.MCPExchange) {
	for k, ex := range exs {
		fmt.Fprintf(w, "\n=== MCP exchange %d of %d (span %s, server %s", k+1, len(exs), ex.SpanID, dash(ex.Server))
		if ex.RerunSource != "" {
			fmt.Fprintf(w, ", %s", ex.RerunSource)
		}
		fmt.Fprintln(w, ")")
		if ex.ReadErr != "" {
			fmt.Fprintf(w, "not readable: %s\n", ex.ReadErr)
		}
		outcome := "ok"
		switch {
		case ex.ErrorCode != "":
			outcome = "JSON-RPC error " + ex.ErrorCode + ": " + ex.ErrorMessage
		case ex.IsError:
			outcome = "isError: true"
		case ex.Notification:
			outcome = "notification (no response)"
		case ex.Response == "":
			outcome = "no response"
		}
		fmt.Fprintf(w, "%s -> %s in %s\n", strings.TrimSpace(ex.Method+" "+ex.Tool), outcome, ex.Duration.Round(time.Millisecond))
		fmt.Fprintln(w, "--- request")
		if ex.RequestID != "" {
			fmt.Fprintf(w, "id: %s\n", ex.RequestID)
		}
		if ex.Arguments != "" {
			fmt.Fprintf(w, "arguments: %s\n", ex.Arguments)
		} else if ex.Params != "" {
			fmt.Fprintf(w, "params: %s\n", ex.Params)
		}
		fmt.Fprintf(w, "as recorded: %s\n", ex.Request)
		fmt.Fprintln(w, "--- response")
		for i, c := range ex.Content {
			if c.Type == "text" {
				fmt.Fprintf(w, "[%d] text\n%s\n", i+1, c.Text)
			} else {
				fmt.Fprintf(w, "[%d] %s\n%s\n", i+1, c.Type, c.Raw)
			}
		}
		if ex.Response != "" {
			fmt.Fprintf(w, "as recorded: %s\n", ex.Response)
		}
	}
}

// printExchanges prints the recorded HTTP exchanges of a step: request and response with their
// headers and bodies as recorded, a streamed response as its SSE events one by one.
func printExchanges(w io.Writer, exs []*runview.HTTPExchange) {
	for k, ex := range exs {
		fmt.Fprintf(w, "\n=== HTTP exchange %d of %d (span %s", k+1, len(exs), ex.SpanID)
		if ex.Source != "" {
			fmt.Fprintf(w, ", recorded by %s", ex.Source)
		}
		fmt.Fprintln(w, ")")
		if ex.ReadErr != "" {
			fmt.Fprintf(w, "not readable: %s\n", ex.ReadErr)
			continue
		}
		status := "no response"
		if ex.Status > 0 {
			status = fmt.Sprintf("%d %s", ex.Status, http.StatusText(ex.Status))
		}
		fmt.Fprintf(w, "%s %s -> %s in %s\n", ex.Method, ex.URL, status, ex.Duration.Round(time.Millisecond))
		if ex.Error != "" {
			fmt.Fprintf(w, "error: %s\n", ex.Error)
		}
		if ex.CutShort {
			fmt.Fprintln(w, "cut short: the client closed the response early; the body is what it read")
		}
		fmt.Fprintln(w, "--- request")
		printHeaders(w, ex.RequestHeaders)
		fmt.Fprintf(w, "\n%s\n", ex.RequestBody)
		fmt.Fprintln(w, "--- response")
		printHeaders(w, ex.ResponseHeaders)
		if len(ex.Events) == 0 {
			fmt.Fprintf(w, "\n%s\n", ex.ResponseBody)
			continue
		}
		fmt.Fprintf(w, "\n%d server-sent events:\n", len(ex.Events))
		for _, e := range ex.Events {
			fmt.Fprintf(w, "[%d] +%s, %d bytes\n%s", e.Index+1, e.At.Round(time.Millisecond), e.Size, e.Data)
			if !strings.HasSuffix(e.Data, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
}

func printHeaders(w io.Writer, hs []runview.Header) {
	for _, h := range hs {
		for _, v := range h.Values {
			fmt.Fprintf(w, "%s: %s\n", h.Name, v)
		}
	}
}

// unreadReason returns why side was not read, "" when it was or holds nothing.
func unreadReason(m genai.CallMessages, side string) string {
	for _, u := range m.Unread {
		if u.Side == side {
			return u.Reason
		}
	}
	return ""
}

// printMessages prints one side; a side no form was read for names the attribute holding its
// content (unread, printed below as recorded), else says it was not recorded.
func printMessages(w io.Writer, what string, msgs []genai.Message, src genai.Source, unread, reason string) {
	if src == "" && unread != "" {
		fmt.Fprintf(w, "\n=== %s: not read: attribute %s holds it in a form runagain does not read (%s)\n", what, unread, reason)
		return
	}
	if src == "" {
		fmt.Fprintf(w, "\n=== %s: not recorded (no known message form on this span or its records)\n", what)
		return
	}
	noun := "messages"
	if len(msgs) == 1 {
		noun = "message"
	}
	fmt.Fprintf(w, "\n=== %s: %d %s, %s\n", what, len(msgs), noun, src.Describe())
	for _, msg := range msgs {
		fmt.Fprintf(w, "\n--- %s", msg.Role)
		if msg.Name != "" {
			fmt.Fprintf(w, " (name %s)", msg.Name)
		}
		if msg.FinishReason != "" {
			fmt.Fprintf(w, " (finish_reason %s)", msg.FinishReason)
		}
		fmt.Fprintln(w)
		printParts(w, msg.Parts)
	}
}

// printParts prints text and reasoning verbatim; tool calls and responses with their id and
// JSON value; other parts as their JSON.
func printParts(w io.Writer, parts []genai.Part) {
	for _, p := range parts {
		switch p.Type {
		case "text":
			fmt.Fprintln(w, p.Content)
		case "reasoning":
			fmt.Fprintf(w, "[reasoning]\n%s\n", p.Content)
		case "tool_call":
			fmt.Fprintf(w, "[tool_call %s%s]\n", p.Name, idSuffix(p.ID))
			if p.Arguments != nil {
				fmt.Fprintln(w, genai.MarshalCompact(p.Arguments))
			}
		case "tool_call_response":
			fmt.Fprintf(w, "[tool_call_response%s]\n", idSuffix(p.ID))
			if p.Response != nil {
				fmt.Fprintln(w, genai.MarshalCompact(p.Response))
			}
		default:
			fmt.Fprintf(w, "[%s]\n%s\n", p.Type, genai.MarshalCompact(p))
		}
	}
}

// idSuffix is " id=ID", or nothing when the call has no id (some frameworks record none).
func idSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " id=" + id
}
