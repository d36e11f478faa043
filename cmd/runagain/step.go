package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

// stepInputKeys are the attributes that hold what a model received, in the order printed:
// GenAI semantic conventions first, then the older and vendor dialects (DESIGN.md lists them).
var stepInputKeys = []string{
	genai.AttrSystemInstructions, genai.AttrInputMessages, genai.AttrToolDefinitions,
	"gen_ai.prompt", "ai.prompt", "ai.prompt.messages", "ai.prompt.tools", "input.value",
	"pydantic_ai.all_messages",
}

// stepInputPrefixes are flattened dialects: every attribute under them is part of the input.
var stepInputPrefixes = []string{"gen_ai.prompt.", "llm.input_messages.", "llm.tools.", "ai.prompt."}

// StepInput is what `runagain show TRACE_ID --step N --json` prints: the model input of the N-th
// LLM call (1-based, in run order), each attribute's value exactly as recorded.
type StepInput struct {
	Step   int               `json:"step"`
	Steps  int               `json:"steps"`
	SpanID string            `json:"span_id"`
	Name   string            `json:"name"`
	Model  string            `json:"model,omitempty"`
	Input  map[string]any    `json:"input"`
	Keys   []string          `json:"keys"`
	raw    map[string]string // string values, printed verbatim in text mode
}

// llmSteps returns the run's LLM spans in run order.
func llmSteps(run *store.Run) []ptrace.Span {
	_, flat := store.Order(run.Traces, nil)
	var out []ptrace.Span
	for _, n := range flat {
		if genai.Classify(n.Span.Attributes()) == genai.KindLLM {
			out = append(out, n.Span)
		}
	}
	return out
}

// stepInput extracts the model input of step n (1-based). Errors name the valid range.
func stepInput(run *store.Run, n int) (*StepInput, error) {
	steps := llmSteps(run)
	if len(steps) == 0 {
		return nil, fmt.Errorf("run %s has no LLM call", run.TraceID)
	}
	if n < 1 || n > len(steps) {
		return nil, fmt.Errorf("--step %d: run %s has LLM steps 1..%d", n, run.TraceID, len(steps))
	}
	s := steps[n-1]
	in := &StepInput{Step: n, Steps: len(steps), SpanID: s.SpanID().String(), Name: s.Name(),
		Model: genai.Model(s.Attributes()), Input: map[string]any{}, raw: map[string]string{}}
	take := func(k string, v pcommon.Value) {
		if _, dup := in.Input[k]; dup {
			return
		}
		in.Input[k] = v.AsRaw()
		in.raw[k] = v.AsString()
		in.Keys = append(in.Keys, k)
	}
	for _, k := range stepInputKeys {
		if v, ok := s.Attributes().Get(k); ok {
			take(k, v)
		}
	}
	var flatKeys []string
	s.Attributes().Range(func(k string, _ pcommon.Value) bool {
		for _, p := range stepInputPrefixes {
			if strings.HasPrefix(k, p) {
				flatKeys = append(flatKeys, k)
				break
			}
		}
		return true
	})
	sort.Slice(flatKeys, func(i, j int) bool { return naturalLess(flatKeys[i], flatKeys[j]) })
	for _, k := range flatKeys {
		v, _ := s.Attributes().Get(k)
		take(k, v)
	}
	return in, nil
}

func printStep(w io.Writer, in *StepInput, asJSON bool) error {
	if asJSON {
		return printJSON(w, in)
	}
	fmt.Fprintf(w, "step %d of %d: %s (span %s, model %s)\n", in.Step, in.Steps, in.Name, in.SpanID, dash(in.Model))
	if len(in.Keys) == 0 {
		fmt.Fprintln(w, "(this LLM span recorded no input attributes)")
	}
	for _, k := range in.Keys {
		fmt.Fprintf(w, "\n=== %s\n%s\n", k, in.raw[k])
	}
	return nil
}

// naturalLess orders flattened keys with their numeric segments as numbers, so message 10 comes
// after message 9 (llm.input_messages.9.* < llm.input_messages.10.*).
func naturalLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}
