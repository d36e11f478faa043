// SPDX-License-Identifier: Apache-2.0

// Package diff compares two agent runs step by step: the core of `runagain diff`, the UI's diff
// page and `runagain test`.
//
// A run's steps are its LLM calls and tool calls in run order (store.Order), plus recorded HTTP
// exchanges that are not the transport of an LLM or tool span (the tool APIs of an agent recorded
// by `runagain proxy --record`; an OpenAI chat completions exchange counts as an LLM call). The
// two step lists are aligned with the Myers difference algorithm on step signatures (kind,
// operation, tool name, model); runs of unmatched steps between two matches are aligned again
// on kind and tool name alone, so a step whose model changed still pairs with its counterpart.
// Each pair is compared field by field (messages message by message with a line diff inside a
// changed message; tool arguments and results as JSON by path; tokens, cost, latency, status),
// and the first pair that differs is named with why. The JSON schema is in README.md.
package diff

import (
	"errors"
	"fmt"
	"strings"

	"github.com/runagain/runagain/internal/runview"
)

// SchemaVersion is the version of the JSON of a Result (README.md). It changes only when a field
// is renamed or removed or its meaning changes; fields may be added within a version.
const SchemaVersion = 1

// Fields that can differ in a pair, in the order the first difference is chosen: what the step
// received before what it produced, the model last (a changed model is a cause; the difference
// it made is what a reader looks for).
const (
	FieldInputMessages      = "input_messages"
	FieldSystemInstructions = "system_instructions"
	FieldToolDefinitions    = "tool_definitions"
	FieldToolArguments      = "tool_arguments"
	FieldToolResult         = "tool_result"
	FieldToolChosen         = "tool_chosen"
	FieldOutput             = "output"
	FieldFinishReason       = "finish_reason"
	FieldError              = "error"
	FieldRequestParameters  = "request_parameters" // temperature, top_p, max tokens, tool choice... (Step.Request)
	FieldRequestModel       = "request_model"      // the model asked for (gen_ai.request.model, or the body sent)
	FieldModel              = "model"
	FieldOnlyInA            = "only_in_a" // a step of A has no counterpart in B
	FieldOnlyInB            = "only_in_b"
)

var fieldOrder = []string{FieldInputMessages, FieldSystemInstructions, FieldToolDefinitions, FieldRequestParameters, FieldToolArguments,
	FieldToolResult, FieldToolChosen, FieldOutput, FieldFinishReason, FieldError, FieldRequestModel, FieldModel}

// Pair operations.
const (
	OpSame    = "same"    // aligned, no field differs (tokens, cost and latency may)
	OpChanged = "changed" // aligned, at least one field differs
	OpOnlyA   = "only_a"
	OpOnlyB   = "only_b"
)

// Options tune Runs.
type Options struct {
	// Step, when > 0, compares only the Step-th LLM call (1-based, as `runagain show --step N`)
	// of each run: what the model saw (system instructions, tool definitions, input messages,
	// all of them listed) and what it answered.
	Step int
	// Messages builds the messages of an LLM span; nil uses the built-in reader (see messages.go).
	Messages MessagesFunc
}

// Result is the comparison of run A with run B. Every field is JSON-serialisable (README.md).
type Result struct {
	SchemaVersion int     `json:"schema_version"`
	A             RunInfo `json:"a"`
	B             RunInfo `json:"b"`
	Step          int     `json:"step,omitempty"` // Options.Step
	// Changes are the recorded changes of a rerun (runagain.rerun.changes) when one run is a
	// rerun of the other: what was changed on purpose, shown before any difference.
	Changes   []string `json:"changes,omitempty"`
	Identical bool     `json:"identical"`
	// Notes say what the comparison could not see (a run from the warm tier keeps no payloads).
	Notes  []string         `json:"notes,omitempty"`
	First  *FirstDifference `json:"first_difference"` // null when Identical
	Pairs  []Pair           `json:"pairs"`
	Totals Totals           `json:"totals"`
}

// RunInfo names one side.
type RunInfo struct {
	TraceID string `json:"trace_id"`
	Tier    string `json:"tier,omitempty"`
	Steps   int    `json:"steps"`
	Rerun   *Rerun `json:"rerun,omitempty"` // the run is a rerun: of which run, with which changes
}

// Step is one step of a run.
type Step struct {
	Index          int      `json:"index"`              // 1-based position among the run's steps
	LLMStep        int      `json:"llm_step,omitempty"` // 1-based among LLM calls (`show --step N`)
	SpanID         string   `json:"span_id"`
	Kind           string   `json:"kind"`      // "llm", "tool", "http", "mcp"
	Operation      string   `json:"operation"` // gen_ai.operation.name; "chat", "execute_tool", "http" when absent
	Name           string   `json:"name,omitempty"`
	Model          string   `json:"model,omitempty"`
	Status         string   `json:"status"` // "ok", "error", "unset"
	Error          string   `json:"error,omitempty"`
	FinishReasons  []string `json:"finish_reasons,omitempty"`
	InputTokens    int64    `json:"input_tokens"`
	OutputTokens   int64    `json:"output_tokens"`
	CostUSD        float64  `json:"cost_usd"`
	Unpriced       bool     `json:"unpriced,omitempty"`
	DurationMS     float64  `json:"duration_ms"`
	MessagesSource string   `json:"messages_source,omitempty"`
	// Request is what an LLM call asked for (request.go: model, temperature, top_p, max_tokens,
	// tool_choice, tools, system_instructions and any other gen_ai.request.* by its name).
	Request       map[string]string `json:"request,omitempty"`
	Derived       bool              `json:"derived,omitempty"`        // read from a recorded HTTP exchange (runagain.genai.derived)
	MessagesError string            `json:"messages_error,omitempty"` // the messages could not all be read (a malformed or unresolved payload)
}

// Pair is one entry of the alignment.
type Pair struct {
	Op          string       `json:"op"`
	A           *Step        `json:"a"` // null for only_b
	B           *Step        `json:"b"` // null for only_a
	Differences []Difference `json:"differences,omitempty"`
	// Message lists, message by message; present when they differ (always with Options.Step).
	Input  []MessageDiff `json:"input_messages,omitempty"`
	Output []MessageDiff `json:"output_messages,omitempty"`
	// JSON changes by path: tool arguments (of a tool step, or of the tool calls an LLM answered
	// with, as "[i].arguments..."), tool results.
	Arguments []JSONChange `json:"arguments,omitempty"`
	Result    []JSONChange `json:"result,omitempty"`
	Metrics   *Metrics     `json:"metrics,omitempty"` // aligned pairs only
}

// Difference is one field that differs in a pair, with a one-line summary.
type Difference struct {
	Field   string `json:"field"`
	Summary string `json:"summary"`
	A       string `json:"a,omitempty"` // short values (model, finish reasons, error, tool names)
	B       string `json:"b,omitempty"`
}

// MessageDiff is one message of the aligned message lists.
type MessageDiff struct {
	Op   string     `json:"op"`          // "same", "changed", "removed" (only in A), "added" (only in B)
	A    int        `json:"a,omitempty"` // 1-based index in A's list
	B    int        `json:"b,omitempty"`
	Role string     `json:"role"`
	Text []TextLine `json:"text,omitempty"` // changed: line diff of the rendered message; added/removed: its lines
}

// TextLine is one line of a text diff.
type TextLine struct {
	Op   string `json:"op"` // " " (both), "-" (A only), "+" (B only)
	Text string `json:"text"`
}

// JSONChange is one JSON value that differs, by path ("city", "items[0].name"; "" is the root).
type JSONChange struct {
	Path string `json:"path"`
	Op   string `json:"op"` // "changed", "removed" (only in A), "added" (only in B)
	A    any    `json:"a,omitempty"`
	B    any    `json:"b,omitempty"`
}

// Metrics compare the numbers of an aligned pair.
type Metrics struct {
	InputTokens  IntDelta   `json:"input_tokens"`
	OutputTokens IntDelta   `json:"output_tokens"`
	CostUSD      FloatDelta `json:"cost_usd"`
	DurationMS   FloatDelta `json:"duration_ms"`
	StatusA      string     `json:"status_a"`
	StatusB      string     `json:"status_b"`
}

// IntDelta is a count in A, in B, and B minus A.
type IntDelta struct {
	A     int64 `json:"a"`
	B     int64 `json:"b"`
	Delta int64 `json:"delta"`
}

// FloatDelta is a quantity in A, in B, and B minus A.
type FloatDelta struct {
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Delta float64 `json:"delta"`
}

// Totals compare the runs as wholes. Duration is from the earliest span start to the latest
// span end; errors count spans with status ERROR; alerts count agent_guard alert records
// (event runagain.alert) stored with the run.
type Totals struct {
	Steps     IntDelta `json:"steps"`
	LLMCalls  IntDelta `json:"llm_calls"`
	ToolCalls IntDelta `json:"tool_calls"` // tool calls (spans, and MCP tools/call exchanges not covered)
	// HTTPCalls are the other HTTP and MCP exchanges that are steps (a tool API, an MCP
	// handshake), as the read model counts them (runview.Totals.HTTPCalls).
	HTTPCalls    IntDelta   `json:"http_calls"`
	InputTokens  IntDelta   `json:"input_tokens"`
	OutputTokens IntDelta   `json:"output_tokens"`
	CostUSD      FloatDelta `json:"cost_usd"`
	Unpriced     IntDelta   `json:"unpriced"` // LLM calls with usage but no known price (not counted in cost_usd)
	DurationMS   FloatDelta `json:"duration_ms"`
	Errors       IntDelta   `json:"errors"`
	Alerts       IntDelta   `json:"alerts"`
}

// FirstDifference is the first pair in alignment order that is not "same", and why.
type FirstDifference struct {
	Pair   int      `json:"pair"`             // 0-based index into Pairs
	StepA  int      `json:"step_a,omitempty"` // Step.Index in A; 0 when only in B
	StepB  int      `json:"step_b,omitempty"`
	Field  string   `json:"field"`  // the first of Fields in the order documented in README.md
	Fields []string `json:"fields"` // every field that differs in that pair
	Text   string   `json:"text"`   // one line for a person
}

// Runs compares run a with run b, read by the read model (runview.Build: the steps, counts and
// costs every other view shows). Offloaded payloads must already be rehydrated (a remaining
// reference to messages is an error naming the span). Runs from the warm or cold tier compare
// what they keep (no messages).
func Runs(a, b *runview.View, opts Options) (*Result, error) {
	if a == nil || b == nil {
		return nil, errors.New("diff: nil run")
	}
	for _, r := range []*runview.View{a, b} {
		if r.Tier == "cold" {
			return nil, fmt.Errorf("run %s is only in the cold tier (its session's summary): it has no steps to compare", r.TraceID)
		}
	}
	msgs := opts.Messages
	if msgs == nil {
		msgs = callMessages
	}
	// The two runs' step lists are built side by side (runSteps only reads its View and its
	// spans); a run diffed with itself (the same View) is listed once and both sides share its
	// steps. The messages are read after the alignment (readAll).
	var (
		sa, sb    []*step
		ta, tb    runStats
		err, errB error
	)
	if a == b && fastPaths {
		sa, ta, err = runSteps(a)
		sb, tb, errB = sa, ta, err
	} else {
		doneB := make(chan struct{})
		go func() {
			defer close(doneB)
			sb, tb, errB = runSteps(b)
		}()
		sa, ta, err = runSteps(a)
		<-doneB
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", a.TraceID, err)
	}
	if errB != nil {
		return nil, fmt.Errorf("run %s: %w", b.TraceID, errB)
	}
	r := &Result{SchemaVersion: SchemaVersion, Step: opts.Step, Pairs: []Pair{},
		A: RunInfo{TraceID: a.TraceID, Tier: a.Tier, Steps: len(sa)},
		B: RunInfo{TraceID: b.TraceID, Tier: b.Tier, Steps: len(sb), Rerun: runRerun(b)}}
	r.A.Rerun = runRerun(a)
	switch {
	case r.B.Rerun != nil && (r.B.Rerun.OriginalTraceID == a.TraceID || r.A.Rerun == nil):
		r.Changes = r.B.Rerun.Changes
	case r.A.Rerun != nil:
		r.Changes = r.A.Rerun.Changes
	}
	r.Totals = Totals{
		Steps: idelta(ta.steps, tb.steps), LLMCalls: idelta(ta.llm, tb.llm), ToolCalls: idelta(ta.tools, tb.tools), HTTPCalls: idelta(ta.http, tb.http),
		InputTokens: idelta(ta.inputTokens, tb.inputTokens), OutputTokens: idelta(ta.outputTokens, tb.outputTokens),
		CostUSD: fdelta(ta.cost, tb.cost), Unpriced: idelta(ta.unpriced, tb.unpriced), DurationMS: fdelta(ta.durationMS, tb.durationMS),
		Errors: idelta(ta.errors, tb.errors), Alerts: idelta(ta.alerts, tb.alerts),
	}
	for i, run := range []*runview.View{a, b} {
		if run.Tier == "warm" {
			r.Notes = append(r.Notes, fmt.Sprintf("run %s (%s) is from the warm tier: step summaries only; messages, tool arguments and results are not compared",
				[]string{"a", "b"}[i], run.TraceID))
		}
	}
	if opts.Step > 0 {
		x, err := nthLLM(sa, opts.Step, a.TraceID)
		if err != nil {
			return nil, err
		}
		y, err := nthLLM(sb, opts.Step, b.TraceID)
		if err != nil {
			return nil, err
		}
		// Every message is listed: both are read (nothing is skipped for a pair read once).
		readCalls(x, msgs)
		if y != x {
			readCalls(y, msgs)
		}
		r.Pairs = append(r.Pairs, comparePair(x, y, true))
	} else {
		ka, wa := keys(sa)
		kb, wb := keys(sb)
		pairs := align(ka, kb, wa, wb)
		readAll(sa, sb, pairs, msgs)
		for _, o := range pairs {
			switch {
			case o.a >= 0 && o.b >= 0:
				r.Pairs = append(r.Pairs, comparePair(sa[o.a], sb[o.b], false))
			case o.a >= 0:
				s := sa[o.a].Step
				r.Pairs = append(r.Pairs, Pair{Op: OpOnlyA, A: &s})
			default:
				s := sb[o.b].Step
				r.Pairs = append(r.Pairs, Pair{Op: OpOnlyB, B: &s})
			}
		}
	}
	r.Identical = true
	for i, p := range r.Pairs {
		if p.Op == OpSame {
			continue
		}
		r.Identical = false
		r.First = first(i, p)
		break
	}
	return r, nil
}

func nthLLM(steps []*step, n int, trace string) (*step, error) {
	count := 0
	for _, s := range steps {
		if s.Kind == KindLLM {
			count++
			if s.LLMStep == n {
				return s, nil
			}
		}
	}
	if count == 0 {
		return nil, fmt.Errorf("--step %d: run %s has no LLM call", n, trace)
	}
	return nil, fmt.Errorf("--step %d: run %s has LLM steps 1..%d", n, trace, count)
}

func keys(steps []*step) (strong, weak []string) {
	for _, s := range steps {
		strong = append(strong, s.strong)
		weak = append(weak, s.weak)
	}
	return strong, weak
}

func idelta(a, b int64) IntDelta { return IntDelta{A: a, B: b, Delta: b - a} }
func fdelta(a, b float64) FloatDelta {
	return FloatDelta{A: round(a), B: round(b), Delta: round(b - a)}
}
func round(f float64) float64 {
	// 1e-9 resolution: cost in USD and durations in ms stay readable and stable in JSON.
	const q = 1e9
	if f >= 0 {
		return float64(int64(f*q+0.5)) / q
	}
	return -float64(int64(-f*q+0.5)) / q
}

// first builds the FirstDifference of pair i.
func first(i int, p Pair) *FirstDifference {
	f := &FirstDifference{Pair: i}
	if p.A != nil {
		f.StepA = p.A.Index
	}
	if p.B != nil {
		f.StepB = p.B.Index
	}
	switch p.Op {
	case OpOnlyA:
		f.Field, f.Fields = FieldOnlyInA, []string{FieldOnlyInA}
		f.Text = fmt.Sprintf("step %d of A (%s) has no counterpart in B", p.A.Index, describe(p.A))
		return f
	case OpOnlyB:
		f.Field, f.Fields = FieldOnlyInB, []string{FieldOnlyInB}
		f.Text = fmt.Sprintf("step %d of B (%s) has no counterpart in A", p.B.Index, describe(p.B))
		return f
	}
	for _, d := range p.Differences {
		f.Fields = append(f.Fields, d.Field)
	}
	f.Field = f.Fields[0]
	where := fmt.Sprintf("step %d", p.A.Index)
	if p.A.Index != p.B.Index {
		where = fmt.Sprintf("step %d of A / %d of B", p.A.Index, p.B.Index)
	}
	f.Text = fmt.Sprintf("%s (%s): %s", where, describe(p.A), p.Differences[0].Summary)
	if len(f.Fields) > 1 {
		f.Text += "; also " + strings.Join(f.Fields[1:], ", ")
	}
	return f
}

// describe is a short label of a step: "llm chat gpt-4.1", "http GET /weather".
func describe(s *Step) string {
	parts := []string{s.Kind}
	if s.Kind == KindLLM {
		parts = append(parts, s.Operation)
		if s.LLMStep > 0 {
			parts[0] = fmt.Sprintf("llm call %d", s.LLMStep)
		}
	}
	if s.Name != "" {
		parts = append(parts, s.Name)
	}
	if m := modelLabel(s); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, " ")
}
