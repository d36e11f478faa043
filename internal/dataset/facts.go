// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/runview/rule"
)

// Event names and attributes read from a run's log records (agent_guard alerts and replay
// divergences; their writers are connector/agentguardconnector and internal/proxy).
const (
	EventAlert      = runagainattr.EventAlert
	AttrAlertKind   = runagainattr.AttrAlertKind
	EventDivergence = runagainattr.EventDivergence
	attrDivField    = runagainattr.DivergenceField
	attrDivExpected = runagainattr.DivergenceExpected
	attrDivGot      = runagainattr.DivergenceGot
	attrDivRequest  = runagainattr.DivergenceRequest
)

// ToolCall is one tool call the model asked for.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"` // JSON value
}

// Divergence is the first replayed request that matched no recorded one.
type Divergence struct {
	Request int    `json:"request"` // 1-based
	Detail  string `json:"detail"`  // field: expected X, got Y
}

// Facts are what expectations are checked against, read from one run.
type Facts struct {
	Input     string        `json:"input,omitempty"` // last user message of the first LLM call
	Output    string        `json:"output"`          // text of the last output message of the last LLM call
	HasOutput bool          `json:"has_output"`
	Tools     []ToolCall    `json:"tools"`
	Steps     int64         `json:"steps"`  // LLM calls
	Tokens    int64         `json:"tokens"` // input + output tokens over every LLM call
	CostUSD   float64       `json:"cost_usd"`
	Unpriced  int64         `json:"unpriced,omitempty"` // LLM calls with usage but no known price
	Duration  time.Duration `json:"duration_ns"`
	Alerts    []string      `json:"alerts,omitempty"` // alert.kind of each agent_guard alert
	// Divergence is the run's first replay divergence, if any.
	Divergence *Divergence `json:"divergence,omitempty"`
	// MessagesSource says where the LLM calls were read from: "spans" (GenAI spans) or
	// "http" (derived from recorded HTTP exchanges).
	MessagesSource string `json:"messages_source,omitempty"`
	// Pattern is the run's failure pattern (patterns.FromView(...).ID(); '' for a passing run) and
	// PatternTitle its one-line description.
	Pattern      string `json:"pattern,omitempty"`
	PatternTitle string `json:"pattern_title,omitempty"`
}

// RunFacts reads the facts of a run from its read model (runview.Build with the configured prices;
// payloads rehydrated). LLM calls are the View's counted LLM steps (runview/rule: an instrumented
// agent's calls, or the recorded HTTP exchanges no instrumented call covers, with the GenAI
// attributes derived from their bodies), read with genai.LLMCallMessages; steps, tokens and cost
// are the View's totals, so a budget checks the number every other view shows. Tool calls are
// the tool_call parts of the calls' output messages, else the run's tool steps (MCP tools/call
// exchanges included).
func RunFacts(v *runview.View) (*Facts, error) {
	f := &Facts{Tools: []ToolCall{}, Steps: v.Totals.LLMCalls, Tokens: v.Totals.InputTokens + v.Totals.OutputTokens,
		CostUSD: v.Totals.CostUSD, Unpriced: v.Totals.Unpriced, Duration: v.Totals.Duration}
	if sig := patterns.FromView(v); sig.Failing() {
		f.Pattern, f.PatternTitle = sig.ID(), sig.Title()
	}
	var toolSteps []ToolCall
	var calls []genai.CallMessages
	fromSpans := false
	for _, st := range v.Steps {
		n := v.Nodes[st.Node]
		switch st.Kind {
		case rule.StepLLM:
			cm, err := v.Messages(n)
			if err != nil {
				return nil, fmt.Errorf("span %s: %w", st.SpanID, err)
			}
			calls = append(calls, cm)
			if n.Exchange == nil {
				fromSpans = true
			}
		case rule.StepTool:
			tc := ToolCall{Name: genai.ToolName(n.Effective.Attributes())}
			if p := genai.ToolArguments(n.Effective.Attributes()); p.Value != "" {
				tc.Arguments = jsonValue(p.Value)
			}
			toolSteps = append(toolSteps, tc)
		}
	}
	switch {
	case len(calls) == 0:
	case fromSpans:
		f.MessagesSource = "spans"
	default:
		f.MessagesSource = "http"
	}
	for i, cm := range calls {
		if i == 0 {
			f.Input = lastText(cm.Input, "user")
		}
		for _, m := range cm.Output {
			for _, p := range m.Parts {
				if p.Type == "tool_call" {
					f.Tools = append(f.Tools, ToolCall{Name: p.Name, Arguments: p.Arguments})
				}
			}
		}
		if i == len(calls)-1 && len(cm.Output) > 0 {
			f.Output = text(cm.Output[len(cm.Output)-1])
			f.HasOutput = true
		}
	}
	if len(f.Tools) == 0 && len(toolSteps) > 0 {
		f.Tools = toolSteps
	}
	for _, r := range v.Records {
		a := r.LogRecord.Attributes()
		switch r.EventName {
		case EventAlert:
			kind := runagainattr.AlertKind(a)
			if kind == "" {
				kind = "unknown"
			}
			f.Alerts = append(f.Alerts, kind)
		case EventDivergence:
			d := &Divergence{Detail: attrStr(a, attrDivField) + ": expected " + attrStr(a, attrDivExpected) + ", got " + attrStr(a, attrDivGot)}
			if val, ok := a.Get(attrDivRequest); ok {
				d.Request = int(val.Int())
			}
			if f.Divergence == nil || d.Request < f.Divergence.Request {
				f.Divergence = d
			}
		}
	}
	return f, nil
}

func attrStr(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func text(m genai.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

func lastText(ms []genai.Message, role string) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == role {
			return text(ms[i])
		}
	}
	return ""
}

func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}
