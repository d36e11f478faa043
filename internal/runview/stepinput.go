// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

// stepInputKeys are the attributes that hold what a model received, in the order listed: GenAI
// semantic conventions first, then the older and vendor dialects (docs/architecture.md lists them).
var stepInputKeys = []string{
	genai.AttrSystemInstructions, genai.AttrInputMessages, genai.AttrToolDefinitions,
	"gen_ai.prompt", "ai.prompt", "ai.prompt.messages", "ai.prompt.tools", "input.value",
	"pydantic_ai.all_messages", genai.AttrEventsJSON, genai.AttrLangfuseInput, genai.AttrTraceloopInput,
}

// stepInputPrefixes are flattened dialects: every attribute under them is part of the input.
var stepInputPrefixes = []string{"gen_ai.prompt.", "llm.input_messages.", "llm.tools.", "ai.prompt."}

// StepInput is the model input of the N-th LLM call (1-based, run order): what
// `runagain show TRACE_ID --step N --json` prints and the UI's step page shows. Messages are the
// call's messages as genai.LLMCallMessages reads them (with the form they came from); Input holds
// each input attribute's value exactly as recorded, Raw its string form, Keys the print order.
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
	Raw           map[string]string  `json:"-"`
	// Unread holds, as recorded, the attributes Messages.Unread names (a side's content in a form
	// no dialect reads), for views to show them.
	Unread map[string]string `json:"-"`
	// Exchanges are the recorded HTTP exchanges the call made (ExchangesOf): the request the
	// model API received and its response, SSE events one by one.
	Exchanges []*HTTPExchange `json:"http_exchanges,omitempty"`
	// MCPExchanges are the MCP exchanges the call made (MCPExchangesOf).
	MCPExchanges []*MCPExchange `json:"mcp_exchanges,omitempty"`
}

// StepInput returns the input of LLM call n (1-based, the numbering of Step.LLMStep). Errors name
// the valid range. The span's payloads must be rehydrated.
func (v *View) StepInput(n int) (*StepInput, error) {
	st, err := v.LLMStep(n)
	if err != nil {
		return nil, err
	}
	node := v.Nodes[st.Node]
	s := node.Effective
	in := &StepInput{Step: n, Steps: int(v.Totals.LLMCalls), SpanID: st.SpanID, Name: s.Name(),
		Model: genai.Model(s.Attributes()), Input: map[string]any{}, Raw: map[string]string{}}
	msgs, err := v.Messages(node)
	in.Messages = msgs
	if err != nil {
		in.MessagesError = err.Error()
	}
	in.Exchanges = v.ExchangesOf(st.Node)
	in.MCPExchanges = v.MCPExchangesOf(st.Node)
	in.Unread = map[string]string{}
	for _, u := range msgs.Unread {
		if val, ok := s.Attributes().Get(u.Attribute); ok {
			in.Unread[u.Attribute] = val.AsString()
		}
	}
	take := func(k string, val pcommon.Value) {
		if _, dup := in.Input[k]; dup {
			return
		}
		in.Input[k] = val.AsRaw()
		in.Raw[k] = val.AsString()
		in.Keys = append(in.Keys, k)
	}
	for _, k := range stepInputKeys {
		if val, ok := s.Attributes().Get(k); ok {
			take(k, val)
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
		val, _ := s.Attributes().Get(k)
		take(k, val)
	}
	return in, nil
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
