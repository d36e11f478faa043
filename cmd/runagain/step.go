package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

// stepInputKeys are the attributes that hold what a model received, in the order listed in
// --json: GenAI semantic conventions first, then the older and vendor dialects (docs/architecture.md lists them).
var stepInputKeys = []string{
	genai.AttrSystemInstructions, genai.AttrInputMessages, genai.AttrToolDefinitions,
	"gen_ai.prompt", "ai.prompt", "ai.prompt.messages", "ai.prompt.tools", "input.value",
	"pydantic_ai.all_messages",
}

// stepInputPrefixes are flattened dialects: every attribute under them is part of the input.
var stepInputPrefixes = []string{"gen_ai.prompt.", "llm.input_messages.", "llm.tools.", "ai.prompt."}

// StepInput is what `runagain show TRACE_ID --step N --json` prints for the N-th LLM call
// (1-based, in run order): Messages, the call's messages as genai.LLMCallMessages reads them
// (with the form they came from), and Input, each input attribute's value exactly as recorded.
type StepInput struct {
	Step          int                `json:"step"`
	Steps         int                `json:"steps"`
	SpanID        string             `json:"span_id"`
	Name          string             `json:"name"`
	Model         string             `json:"model,omitempty"`
	Messages      genai.CallMessages `json:"messages"`
	MessagesError string             `json:"messages_error,omitempty"`
	Input         map[string]any     `json:"input"`
	Keys          []string           `json:"keys"`
	raw           map[string]string  // string values, printed verbatim in text mode
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

// spanLogs groups the run's log records by span id, in stored order (time, then arrival).
func spanLogs(ld plog.Logs) map[pcommon.SpanID][]plog.LogRecord {
	out := map[pcommon.SpanID][]plog.LogRecord{}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if !lr.SpanID().IsEmpty() {
					out[lr.SpanID()] = append(out[lr.SpanID()], lr)
				}
			}
		}
	}
	return out
}

// stepInput extracts the messages of step n (1-based). Errors name the valid range.
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
	msgs, err := genai.LLMCallMessages(s, spanLogs(run.Logs)[s.SpanID()])
	in.Messages = msgs
	if err != nil {
		in.MessagesError = err.Error()
	}
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

// printStep prints the step: system instructions, tool definitions, input and output messages,
// each list labelled with the form it was read from. Text is printed as recorded.
func printStep(w io.Writer, in *StepInput, asJSON bool) error {
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
	printMessages(w, "input", m.Input, m.InputSource)
	printMessages(w, "output", m.Output, m.OutputSource)
	if m.InputSource == "" && m.OutputSource == "" && len(in.Keys) > 0 {
		fmt.Fprintln(w, "\nattributes recorded as input (no known message form):")
		for _, k := range in.Keys {
			fmt.Fprintf(w, "\n=== %s\n%s\n", k, in.raw[k])
		}
	}
	return nil
}

func printMessages(w io.Writer, what string, msgs []genai.Message, src genai.Source) {
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
			fmt.Fprintf(w, "[tool_call %s id=%s]\n", p.Name, p.ID)
			if p.Arguments != nil {
				fmt.Fprintln(w, genai.MarshalCompact(p.Arguments))
			}
		case "tool_call_response":
			fmt.Fprintf(w, "[tool_call_response id=%s]\n", p.ID)
			if p.Response != nil {
				fmt.Fprintln(w, genai.MarshalCompact(p.Response))
			}
		default:
			fmt.Fprintf(w, "[%s]\n%s\n", p.Type, genai.MarshalCompact(p))
		}
	}
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
