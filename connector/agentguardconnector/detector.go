// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

// Alert kinds (attribute alert.kind): one detector each.
const (
	KindLoop            = "loop"             // loopDetector
	KindCostSpike       = "cost_spike"       // costSpikeDetector
	KindToolErrorSpike  = "tool_error_spike" // toolErrorDetector
	KindContextPressure = "context_pressure" // contextPressureDetector
)

// Loop rules (attribute runagain.alert.rule on loop alerts).
const (
	RuleRepeatedToolCall   = "repeated_tool_call"
	RuleRepeatedLLMRequest = "repeated_llm_request"
	RuleConsecutiveTool    = "consecutive_tool"
)

// detector is one alert rule. It sees every LLM and tool call, in run order, after the call's
// metrics were recorded and its cost added to the session, and returns the alert this call
// raises, or nil. One call raises at most one alert per detector (a detector alerts once per
// subject and session, or once per window). Detectors run under the guard's mutex.
type detector interface {
	observe(c *call) *alert
}

// sessionEnder is a detector that learns from ended sessions (the cost baseline).
type sessionEnder interface {
	sessionEnded(s *session)
}

// call is one analysed LLM or tool span.
type call struct {
	s       *session
	kind    genai.Kind // genai.KindLLM or genai.KindTool
	attrs   pcommon.Map
	service string // service.name of the span's resource
	agent   string // gen_ai.agent.name of the span, its trace, or its session
	ref     spanRef
	start   pcommon.Timestamp
	end     int64  // ns; the start time when the span ends before it starts
	op      string // gen_ai.operation.name, defaulted to chat or execute_tool
	errType string // error.type, "_OTHER" for an error status without one, "" for success

	// LLM calls
	provider, reqModel, respModel string
	usage                         genai.Usage
	costed                        bool    // priced: cost was added to s.cost
	cost                          float64 // USD, when costed

	// Tool calls
	tool string // gen_ai.tool.name
}

// hit is the reference a window detector remembers for a call that counted as a hit.
func (c *call) hit() hitRef {
	return hitRef{c.ref, c.s.id, c.end}
}
