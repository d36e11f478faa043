// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
)

// Request keys of Step.Request: what an LLM call asked for. The model and parameters come from
// the span's gen_ai.request.* attributes (semantic-conventions-genai; the key is the attribute
// name without the prefix: "model", "temperature", "top_p", "max_tokens", ...), overridden by the
// request body actually sent when the call's HTTP exchange was recorded (a rerun's --set edits
// the body, not the agent's span); "tools" names the tools offered, "tool_choice" the body's
// tool_choice, "system_instructions" the first systemPreview characters of the instructions.
const (
	ReqModel       = "model"
	ReqTemperature = "temperature"
	ReqTopP        = "top_p"
	ReqMaxTokens   = "max_tokens"
	ReqToolChoice  = "tool_choice"
	ReqTools       = "tools"
	ReqSystem      = "system_instructions"
)

// requestOrder is the order requests are printed in; other keys follow, sorted.
var requestOrder = []string{ReqModel, ReqTemperature, ReqTopP, ReqMaxTokens, ReqToolChoice, ReqTools, ReqSystem}

// systemPreview bounds the system instructions kept in Step.Request (runes); the whole text is
// compared as the system_instructions field.
const systemPreview = 160

const attrRequestPrefix = "gen_ai.request."

// requestOf reads an LLM step's request from its attributes and messages.
func requestOf(a pcommon.Map, cm *CallMessages) map[string]string {
	out := map[string]string{}
	a.Range(func(k string, v pcommon.Value) bool {
		if name, ok := strings.CutPrefix(k, attrRequestPrefix); ok && name != "" {
			out[name] = v.AsString()
		}
		return true
	})
	if cm != nil {
		if names := toolDefNames(cm.ToolDefinitions); len(names) > 0 {
			out[ReqTools] = strings.Join(names, ", ")
		}
		var sys []string
		for _, p := range cm.SystemInstructions {
			if p.Content != "" {
				sys = append(sys, p.Content)
			}
		}
		if s := strings.Join(sys, "\n"); s != "" {
			if r := []rune(s); len(r) > systemPreview {
				s = string(r[:systemPreview]) + "…"
			}
			out[ReqSystem] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// toolDefNames lists the names in a tool definitions value: [{name}, {function: {name}}].
func toolDefNames(defs any) []string {
	list, _ := defs.([]any)
	var out []string
	for _, d := range list {
		m, _ := d.(map[string]any)
		if n, ok := m["name"].(string); ok && n != "" {
			out = append(out, n)
		} else if f, ok := m["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok && n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// wireRequest reads the request fields of a recorded LLM API request body (OpenAI chat
// completions and Responses, Anthropic Messages: top-level model, temperature, top_p,
// max_tokens / max_completion_tokens / max_output_tokens, tool_choice, tools; Gemini's
// generationConfig). A body that is not a JSON object gives nil.
func wireRequest(sp ptrace.Span) map[string]string {
	ex, err := fixture.FromSpan(sp)
	if err != nil || len(ex.RequestBody) == 0 {
		return nil
	}
	var body map[string]any
	if json.Unmarshal(ex.RequestBody, &body) != nil {
		return nil
	}
	out := map[string]string{}
	put := func(k string, v any) {
		switch x := v.(type) {
		case nil:
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			if b, err := json.Marshal(x); err == nil {
				out[k] = string(b)
			}
		}
	}
	put(ReqModel, body["model"])
	cfg, _ := body["generationConfig"].(map[string]any)
	for _, src := range []map[string]any{body, cfg} {
		if src == nil {
			continue
		}
		for k, keys := range map[string][]string{
			ReqTemperature: {"temperature"}, ReqTopP: {"top_p", "topP"},
			ReqMaxTokens: {"max_completion_tokens", "max_tokens", "max_output_tokens", "maxOutputTokens"},
		} {
			for _, key := range keys {
				if v, ok := src[key]; ok {
					put(k, v)
					break
				}
			}
		}
	}
	put(ReqToolChoice, body["tool_choice"])
	if names := toolDefNames(body["tools"]); len(names) > 0 {
		out[ReqTools] = strings.Join(names, ", ")
	}
	return out
}

// mergeRequest sets the values of wire (what was sent) over those of r (what the span says).
func mergeRequest(r, wire map[string]string) map[string]string {
	if len(wire) == 0 {
		return r
	}
	if r == nil {
		r = map[string]string{}
	}
	for k, v := range wire {
		r[k] = v
	}
	return r
}

// requestKeys lists the keys of a and b in print order.
func requestKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var out, rest []string
	for _, k := range requestOrder {
		_, x := a[k]
		_, y := b[k]
		if x || y {
			out = append(out, k)
			seen[k] = true
		}
	}
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				rest = append(rest, k)
			}
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// compareRequests adds the differences of two requests: request_model, and request_parameters
// for the others (tools offered and system instructions are compared in full as
// tool_definitions and system_instructions).
// A request model difference that the model field already says (no response model recorded,
// or the same as the one asked for) is left to that field.
func compareRequests(a, b map[string]string, modelA, modelB string, add func(Difference)) {
	var params []string
	for _, k := range requestKeys(a, b) {
		x, y := a[k], b[k]
		if x == y || k == ReqTools || k == ReqSystem {
			continue
		}
		if k == ReqModel {
			if x == modelA && y == modelB {
				continue
			}
			add(Difference{Field: FieldRequestModel, Summary: fmt.Sprintf("request model %s -> %s", orNone(x), orNone(y)), A: x, B: y})
			continue
		}
		params = append(params, fmt.Sprintf("%s %s -> %s", k, orNone(x), orNone(y)))
	}
	if len(params) > 0 {
		add(Difference{Field: FieldRequestParameters, Summary: "request parameters differ: " + strings.Join(params, ", ")})
	}
}

// requestsDiffer reports whether two requests differ in any key.
func requestsDiffer(a, b map[string]string) bool {
	for _, k := range requestKeys(a, b) {
		if a[k] != b[k] {
			return true
		}
	}
	return false
}

// FormatRequest is a one-line form of a Step.Request in print order: "model gpt-4.1 ·
// temperature 0.2 · tools weather"; system instructions are left out.
func FormatRequest(r map[string]string) string {
	var parts []string
	for _, k := range requestKeys(r, nil) {
		if k == ReqSystem {
			continue
		}
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+r[k])
	}
	return strings.Join(parts, " · ")
}

// Rerun is what a rerun recorded on its root span (cmd/runagain rerun, internal/proxy
// AttrRerun*): the run it reran and each change given (--set PATH=VALUE, or runagain test
// --change).
type Rerun struct {
	OriginalTraceID string   `json:"original_trace_id,omitempty"`
	Changes         []string `json:"changes"`
	FromStep        int      `json:"from_step,omitempty"`
}

// Attributes of a rerun's root span (internal/proxy AttrRerunOriginalTrace, AttrRerunChanges,
// AttrRerunFromStep).
const (
	attrRerunOriginal = runagainattr.RerunOriginalTrace
	attrRerunChanges  = runagainattr.RerunChanges
	attrRerunFromStep = runagainattr.RerunFromStep
)

// rerunOf reads the rerun attributes of the first span that has them; nil when the run is not
// a rerun.
func rerunOf(a pcommon.Map) *Rerun {
	orig, ok1 := a.Get(attrRerunOriginal)
	_, ok2 := a.Get(attrRerunChanges)
	if !ok1 && !ok2 {
		return nil
	}
	r := &Rerun{Changes: []string{}}
	if ok1 {
		r.OriginalTraceID = orig.AsString()
	}
	if ok2 {
		r.Changes, _ = runagainattr.Changes(a) // a string array; `runagain test` wrote a plain string before
	}
	if v, ok := a.Get(attrRerunFromStep); ok {
		r.FromStep = int(v.Int())
	}
	return r
}

// modelLabel is the model a step is shown with: the request model, with the response model
// after it when they differ ("gpt-4.1 (answered gpt-4o-mini)").
func modelLabel(s *Step) string {
	req := s.Request[ReqModel]
	switch {
	case req == "" || req == s.Model:
		return s.Model
	case s.Model == "":
		return req
	}
	return req + " (answered " + s.Model + ")"
}

// runRerun reads the rerun attributes of the run's spans (the root span carries them).
func runRerun(v *runview.View) *Rerun {
	for _, n := range v.Nodes {
		if r := rerunOf(n.Span.Attributes()); r != nil {
			return r
		}
	}
	return nil
}

// ChangesLine is the one line naming a rerun's recorded changes (Result.Changes), which side
// is the rerun, and of which run: "b is a rerun of a with: model=gpt-4.1".
func ChangesLine(r *Result) string {
	side, other, rr := "b", "a", r.B.Rerun
	if rr == nil || (r.A.Rerun != nil && r.B.Rerun.OriginalTraceID != r.A.TraceID) {
		side, other, rr = "a", "b", r.A.Rerun
	}
	if rr == nil {
		return ""
	}
	of := "of " + other
	if rr.OriginalTraceID != "" && rr.OriginalTraceID != map[string]string{"a": r.A.TraceID, "b": r.B.TraceID}[other] {
		of = "of " + rr.OriginalTraceID + " (not " + other + ")"
	}
	ch := "no change (a replay)"
	if len(rr.Changes) > 0 {
		ch = strings.Join(rr.Changes, "; ")
	}
	line := fmt.Sprintf("%s is a rerun %s with: %s", side, of, ch)
	if rr.FromStep > 0 {
		line += fmt.Sprintf(" (live from LLM call %d)", rr.FromStep)
	}
	return line
}
