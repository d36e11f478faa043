// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/runview/rule"
)

// Step kinds.
const (
	KindLLM  = "llm"  // an LLM call (genai.KindLLM, or an LLM API exchange recorded by the proxy)
	KindTool = "tool" // a tool execution span (genai.KindTool)
	KindHTTP = "http" // any other recorded HTTP exchange not inside an LLM or tool span (a tool API)
)

// step is one step of a run with what the comparison needs.
type step struct {
	Step
	strong, weak string
	calls        *CallMessages // KindLLM
	args, result any           // KindTool, KindHTTP: JSON values (a string when not JSON)
	hasArgs      bool
	hasResult    bool
}

// runSteps lists the steps of the run's View in run order, as the read model counted them
// (internal/runview: LLM calls, tool calls, and recorded HTTP exchanges that are not the
// transport of a step nor covered by an instrumented call), with what the comparison needs.
// The totals are the View's.
func runSteps(v *runview.View, msgs MessagesFunc) ([]*step, runStats, error) {
	t := v.Totals
	st := runStats{steps: t.Steps, llm: t.LLMCalls, tools: t.ToolCalls + t.HTTPCalls, errors: t.Errors, alerts: t.Alerts,
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
			cm, err := msgs(n.Effective, n.Logs)
			if err != nil {
				s.MessagesError = err.Error()
			}
			rawFallback(&cm, a)
			s.calls = &cm
			s.Derived = cm.Derived || n.Derived
			s.FinishReasons = genai.FinishReasons(a)
			s.MessagesSource = string(cm.InputSource)
			s.Request = requestOf(a, &cm)
			if n.Exchange != nil {
				s.Request = mergeRequest(s.Request, wireRequest(n.Span))
			}
			byNode[vs.Node] = s
			if len(s.FinishReasons) == 0 {
				for _, m := range cm.Output {
					if m.FinishReason != "" {
						s.FinishReasons = append(s.FinishReasons, m.FinishReason)
					}
				}
			}
		case rule.StepTool:
			s.Kind = KindTool
			if p := genai.ToolArguments(a); p.Value != "" {
				s.args, s.hasArgs = jsonValue(p.Value), true
			}
			for _, k := range genai.ToolResultKeys {
				if val, ok := a.Get(k); ok {
					s.result, s.hasResult = jsonValue(val.AsString()), true
					break
				}
			}
		case rule.StepHTTP:
			s.Kind = KindHTTP
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
			s.args, s.hasArgs = args, true
			res := map[string]any{"status": ex.Status}
			if len(ex.ResponseBody) > 0 {
				res["body"] = jsonValue(string(ex.ResponseBody))
			}
			s.result, s.hasResult = res, true
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
			ps.Request = mergeRequest(ps.Request, wireRequest(n.Span))
		}
	}
	return out, st, nil
}

type runStats struct {
	steps, llm, tools, errors, alerts, unpriced int64
	inputTokens, outputTokens                   int64
	cost, durationMS                            float64
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
