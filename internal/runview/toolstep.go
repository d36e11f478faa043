// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"fmt"

	"github.com/runagain/runagain/internal/genai"
)

// ToolInput is the N-th tool call of a run (1-based among its tool steps, run order): what
// `runagain show TRACE_ID --tool N` prints (--json: this shape). Arguments and Result are
// gen_ai.tool.call.arguments and gen_ai.tool.call.result (else OpenInference input.value and
// output.value) as recorded; the exchanges are those the call made (ExchangesOf, MCPExchangesOf):
// the tool API's HTTP requests, the MCP server's tools/call. The span's payloads must be
// rehydrated.
type ToolInput struct {
	Step         int             `json:"tool_step"`
	Steps        int             `json:"tool_steps"`
	SpanID       string          `json:"span_id"`
	Name         string          `json:"name"` // the tool name, else the span name
	Arguments    string          `json:"arguments,omitempty"`
	Result       string          `json:"result,omitempty"`
	Error        string          `json:"error,omitempty"` // the step's error (status message, error.type), "" when it succeeded
	Exchanges    []*HTTPExchange `json:"http_exchanges,omitempty"`
	MCPExchanges []*MCPExchange  `json:"mcp_exchanges,omitempty"`
}

// ToolStep returns tool call n (1-based, Step.ToolStep); the error names the valid range.
func (v *View) ToolStep(n int) (*ToolInput, error) {
	if v.Totals.ToolCalls == 0 {
		return nil, fmt.Errorf("run %s has no tool call", v.TraceID)
	}
	if n < 1 || int64(n) > v.Totals.ToolCalls {
		return nil, fmt.Errorf("--tool %d: run %s has tool steps 1..%d", n, v.TraceID, v.Totals.ToolCalls)
	}
	for _, st := range v.Steps {
		if st.ToolStep != n {
			continue
		}
		a := v.Nodes[st.Node].Effective.Attributes()
		first := func(keys ...string) string {
			for _, k := range keys {
				if s := attr(a, k); s != "" {
					return s
				}
			}
			return ""
		}
		return &ToolInput{Step: n, Steps: int(v.Totals.ToolCalls), SpanID: st.SpanID, Name: st.Name,
			Arguments: first(genai.ToolArgumentKeys...), Result: first(genai.ToolResultKeys...),
			Error: st.Error, Exchanges: v.ExchangesOf(st.Node), MCPExchanges: v.MCPExchangesOf(st.Node)}, nil
	}
	return nil, fmt.Errorf("--tool %d: not found", n) // unreachable: ToolStep numbers 1..ToolCalls
}
