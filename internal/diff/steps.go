// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/runview/rule"
)

// Step kinds.
const (
	KindLLM  = "llm"  // an LLM call (genai.KindLLM, or an LLM API exchange recorded by the proxy)
	KindTool = "tool" // a tool execution span (genai.KindTool)
	KindHTTP = "http" // any other recorded HTTP exchange not inside an LLM or tool span (a tool API)
	KindMCP  = "mcp"  // an MCP exchange that is a step of its own (initialize, tools/list, ...)
)

// step is one step of a run with what the comparison needs.
type step struct {
	Step
	strong, weak string
	// KindLLM: the node the messages are read from (readCalls), the request bodies of the
	// recorded exchanges that carried the call (merged over the span's request, in order), and
	// once read the messages and the request the span alone gives.
	node    *runview.Node
	wire    []map[string]string
	calls   *CallMessages
	request map[string]string
	// KindTool, KindHTTP: arguments and result, compared as JSON.
	args, result jsonField
}

// jsonField is a step's arguments or result: the text recorded on a tool span (decoded as JSON
// only when it is compared with a different text), or a value built from a recorded exchange.
type jsonField struct {
	set   bool   // the step has the field
	text  bool   // raw holds the recorded text; value is unused
	raw   string // the recorded text (a tool span's gen_ai.tool.call.arguments or result)
	value any    // a JSON value built from an exchange (a string where not JSON)
}

func textField(s string) jsonField { return jsonField{set: true, text: true, raw: s} }
func valueField(v any) jsonField   { return jsonField{set: true, value: v} }

// get is the field as a JSON value (nil when absent).
func (f jsonField) get() any {
	if f.text {
		return jsonValue(f.raw)
	}
	return f.value
}

// sameText reports whether both fields are recorded texts with the same bytes: equal texts
// decode to equal values, so there is no difference to look for.
func sameText(a, b jsonField) bool { return fastPaths && a.text && b.text && a.raw == b.raw }

// runSteps lists the steps of the run's View in run order, as the read model counted them
// (internal/runview: LLM calls, tool calls, and recorded HTTP exchanges that are not the
// transport of a step nor covered by an instrumented call), with what the comparison needs.
// The totals are the View's. The messages of LLM steps are not read here: readCalls reads them
// once the steps are aligned, so that a step recorded exactly as its counterpart is read once
// (Runs). Tool arguments and results are kept as recorded and decoded only when they differ.
func runSteps(v *runview.View) ([]*step, runStats, error) {
	t := v.Totals
	st := runStats{steps: t.Steps, llm: t.LLMCalls, tools: t.ToolCalls, http: t.HTTPCalls, errors: t.Errors, alerts: t.Alerts,
		unpriced: t.Unpriced, inputTokens: t.InputTokens, outputTokens: t.OutputTokens, cost: round(t.CostUSD),
		durationMS: float64(t.Duration) / 1e6}
	out := make([]*step, 0, len(v.Steps))
	byNode := map[int]*step{} // LLM steps by node, for the request their recorded exchange sent
	for _, vs := range v.Steps {
		n := v.Nodes[vs.Node]
		a := n.Effective.Attributes()
		s := newStep(vs)
		switch vs.Kind {
		case rule.StepLLM:
			s.Kind = KindLLM
			s.node = n
			if n.Exchange != nil {
				s.wire = append(s.wire, wireRequest(n.Span))
			}
			byNode[vs.Node] = s
		case rule.StepTool:
			s.Kind = KindTool
			if p := genai.ToolArguments(a); p.Value != "" {
				s.args = textField(p.Value)
			}
			for _, k := range genai.ToolResultKeys {
				if val, ok := a.Get(k); ok {
					s.result = textField(val.AsString())
					break
				}
			}
		case rule.StepHTTP:
			s.Kind = KindHTTP
			if fixture.IsMCPExchange(n.Span) {
				// Compared by its JSON-RPC request and response, as recorded.
				s.Kind = KindMCP
				if v, ok := a.Get(fixture.AttrMCPRequest); ok {
					s.args = textField(v.AsString())
				}
				if v, ok := a.Get(fixture.AttrMCPResponse); ok {
					s.result = textField(v.AsString())
				}
				break
			}
			ex := n.Exchange
			if ex == nil {
				if n.ExchangeErr != nil {
					return nil, st, n.ExchangeErr
				}
				break
			}
			q := url.Values{}
			if u, err := url.Parse(ex.URL); err == nil {
				q = u.Query()
			}
			args := map[string]any{}
			if len(q) > 0 {
				qm := map[string]any{}
				for k, vs := range q {
					if len(vs) == 1 {
						qm[k] = vs[0]
					} else {
						l := make([]any, len(vs))
						for i, v := range vs {
							l[i] = v
						}
						qm[k] = l
					}
				}
				args["query"] = qm
			}
			if len(ex.RequestBody) > 0 {
				args["body"] = jsonValue(string(ex.RequestBody))
			}
			s.args = valueField(args)
			res := map[string]any{"status": ex.Status}
			if len(ex.ResponseBody) > 0 {
				res["body"] = jsonValue(string(ex.ResponseBody))
			}
			s.result = valueField(res)
		}
		s.strong = strings.Join([]string{s.Kind, s.Operation, s.Name, s.Model}, "\x00")
		s.weak = strings.Join([]string{s.Kind, s.Name}, "\x00")
		out = append(out, s)
	}
	// The exchange that carried a step's request (below it, or covered by it) adds what went on
	// the wire.
	for _, n := range v.Nodes {
		if n.Exchange == nil || n.Step != nil {
			continue
		}
		at := n.Verdict.CoveredBy
		if at < 0 {
			at = n.Parent
		}
		if ps := byNode[at]; ps != nil {
			ps.wire = append(ps.wire, wireRequest(n.Span))
		}
	}
	return out, st, nil
}

type runStats struct {
	steps, llm, tools, http, errors, alerts, unpriced int64
	inputTokens, outputTokens                         int64
	cost, durationMS                                  float64
}

func newStep(vs *runview.Step) *step {
	s := &step{Step: Step{Index: vs.Index, LLMStep: vs.LLMStep, SpanID: vs.SpanID, Kind: string(vs.Kind), Status: "unset",
		Operation: vs.Operation, Model: vs.Model, InputTokens: vs.Usage.Input, OutputTokens: vs.Usage.Output,
		CostUSD: round(vs.CostUSD), Unpriced: vs.Unpriced, Derived: vs.Derived, Error: vs.Error,
		DurationMS: float64(vs.Duration) / 1e6}}
	if vs.Kind != rule.StepLLM {
		s.Name = vs.Name
	}
	switch vs.Status {
	case ptrace.StatusCodeOk:
		s.Status = "ok"
	case ptrace.StatusCodeError:
		s.Status = "error"
	}
	return s
}

// canonical is the JSON of v with sorted keys (Go's encoding of maps), for equality.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// rawInputKeys and rawOutputKeys hold an LLM call's input and output as text when no message
// form is recorded (OpenInference without llm.input_messages, Langfuse observations without OTel
// attributes): the diff then compares that text as one message, so two calls whose recorded
// content differs never compare as the same.
var (
	rawInputKeys  = []string{"input.value", "langfuse.observation.input", "llm.prompts"}
	rawOutputKeys = []string{"output.value", "langfuse.observation.output"}
)

// rawFallback fills an empty input or output of cm from the first raw key present; the source
// is "raw:<key>".
func rawFallback(cm *CallMessages, a pcommon.Map) {
	fill := func(msgs *[]Message, src *Source, keys []string, role string) {
		if *src != "" || len(*msgs) > 0 {
			return
		}
		for _, k := range keys {
			if v, ok := a.Get(k); ok && v.AsString() != "" {
				*msgs = []Message{{Role: role, Parts: []Part{{Type: "text", Content: v.AsString()}}}}
				*src = Source("raw:" + k)
				return
			}
		}
	}
	fill(&cm.Input, &cm.InputSource, rawInputKeys, "user")
	fill(&cm.Output, &cm.OutputSource, rawOutputKeys, "assistant")
}
