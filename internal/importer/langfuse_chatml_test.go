// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/genai"
)

// chatMLDir holds Langfuse's own adapter expectations: beside each <framework>.trace.json export,
// <framework>.chatml.json has, per observation id, the messages Langfuse reads from its input and
// output ({success: true, data: [...]}) or {success: false} where Langfuse cannot read them.
const chatMLDir = "langfuse/worker/src/__tests__/chatml/framework-traces"

type chatMLSide struct {
	Success bool             `json:"success"`
	Data    []map[string]any `json:"data"`
}

// chatMLNeedles returns the texts and tool-call names of Langfuse's messages: each must appear in
// what runagain reads from the span.
func chatMLNeedles(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		switch c := m["content"].(type) {
		case string:
			if calls := toolCallsText(c); calls != nil {
				out = append(out, calls...)
			} else if c != "" {
				out = append(out, c)
			}
		case []any:
			for _, p := range c {
				switch x := p.(type) {
				case string:
					out = append(out, x)
				case map[string]any:
					if s, ok := x["text"].(string); ok && s != "" {
						out = append(out, s)
					}
				}
			}
		}
		tcs, _ := m["tool_calls"].([]any)
		for _, e := range tcs {
			if tc, ok := e.(map[string]any); ok {
				if s, ok := tc["name"].(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// toolCallsText returns the names and arguments of a content string that is JSON text of OpenAI
// tool calls (Koog writes an assistant's tool calls so; Langfuse shows the text), nil otherwise.
func toolCallsText(s string) []string {
	var calls []struct {
		Function *struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if !strings.HasPrefix(strings.TrimSpace(s), "[{") || json.Unmarshal([]byte(s), &calls) != nil || len(calls) == 0 {
		return nil
	}
	var out []string
	for _, c := range calls {
		if c.Function == nil || c.Function.Name == "" {
			return nil
		}
		out = append(out, c.Function.Name, c.Function.Arguments)
	}
	return out
}

// messageTexts returns every text runagain shows for one side of a call: part contents, tool
// names, arguments and responses (as JSON text), and for the input the system instructions. A
// text that is JSON is also kept in canonical form (keys sorted, compact), so a tool result
// decoded and shown as a JSON value compares with the JSON string Langfuse shows.
func messageTexts(msgs []genai.Message, system []genai.Part) []string {
	var out []string
	add := func(parts []genai.Part) {
		for _, p := range parts {
			for _, s := range []string{p.Content, p.Name} {
				if s != "" {
					out = append(out, s)
				}
			}
			for _, v := range []any{p.Arguments, p.Response} {
				if v != nil {
					out = append(out, genai.MarshalCompact(v))
				}
			}
		}
	}
	add(system)
	for _, m := range msgs {
		add(m.Parts)
	}
	for _, s := range out {
		if c, ok := canonicalJSON(s); ok {
			out = append(out, c)
		}
	}
	return out
}

func canonicalJSON(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return "", false
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return "", false
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

func containsText(hay []string, needle string) bool {
	c, isJSON := canonicalJSON(needle)
	for _, h := range hay {
		if strings.Contains(h, needle) || (isJSON && strings.Contains(h, c)) {
			return true
		}
	}
	return false
}

// TestLangfuseChatMLConformance is the conformance test against Langfuse's own expectations:
// for every *.trace.json / *.chatml.json pair of the corpus, every GENERATION observation side
// that Langfuse reads is an LLM call whose messages, as genai.LLMCallMessages reads them (what
// `runagain show TRACE --step N` prints), hold every text and tool-call name of Langfuse's
// messages; a side Langfuse cannot read shows the content the observation holds, or names the
// attribute holding it. It fails naming the trace, the observation and the missing text.
func TestLangfuseChatMLConformance(t *testing.T) {
	dir := filepath.Join(corpus.Dir(t), chatMLDir)
	traces, err := filepath.Glob(filepath.Join(dir, "*.trace.json"))
	require.NoError(t, err)
	if len(traces) == 0 {
		t.Skipf("no *.trace.json under %s", dir)
	}
	sides, shown := 0, 0
	for _, path := range traces {
		name := strings.TrimSuffix(filepath.Base(path), ".trace.json")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		want := map[string]map[string]chatMLSide{}
		raw, err := os.ReadFile(filepath.Join(dir, name+".chatml.json"))
		require.NoError(t, err, "%s: the .chatml.json beside the trace", name)
		require.NoError(t, json.Unmarshal(raw, &want), name)

		var export struct {
			Observations []struct {
				ID     string          `json:"id"`
				Type   string          `json:"type"`
				Input  json.RawMessage `json:"input"`
				Output json.RawMessage `json:"output"`
			} `json:"observations"`
		}
		require.NoError(t, json.Unmarshal(data, &export), name)
		res, err := ParseBytes(path, data)
		require.NoError(t, err, name)
		spans := observationSpans(res.Traces)

		ids := make([]string, 0, len(want))
		for id := range want {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, ob := range export.Observations {
			exp, ok := want[ob.ID]
			if !ok || ob.Type != "GENERATION" {
				continue
			}
			span, ok := spans[ob.ID]
			if !ok {
				t.Errorf("%s: observation %s: no span imported", name, ob.ID)
				continue
			}
			if k := genai.Classify(span.Attributes()); k != genai.KindLLM {
				t.Errorf("%s: observation %s (%s): classified %q, not an LLM call (no step)", name, ob.ID, span.Name(), k)
			}
			cm, msgErr := genai.LLMCallMessages(span, nil)
			for _, side := range []struct {
				name    string
				exp     chatMLSide
				field   json.RawMessage
				msgs    []genai.Message
				system  []genai.Part
				source  genai.Source
				unknown string
			}{
				{"input", exp["input"], ob.Input, cm.Input, cm.SystemInstructions, cm.InputSource, cm.UnreadAttr("input")},
				{"output", exp["output"], ob.Output, cm.Output, nil, cm.OutputSource, cm.UnreadAttr("output")},
			} {
				if !side.exp.Success {
					// Langfuse cannot read it: the content the observation holds is shown, or the
					// attribute holding it is named.
					if !isEmptyJSON(side.field) && side.source == "" && side.unknown == "" {
						t.Errorf("%s: observation %s %s: Langfuse cannot read it and runagain neither shows it nor names its attribute (error: %v)", name, ob.ID, side.name, msgErr)
					}
					continue
				}
				needles := chatMLNeedles(side.exp.Data)
				if len(needles) == 0 {
					continue
				}
				sides++
				hay := messageTexts(side.msgs, side.system)
				ok := true
				for _, n := range needles {
					if !containsText(hay, n) {
						ok = false
						t.Errorf("%s: observation %s (%s) %s: text %q missing (source %q, error: %v)", name, ob.ID, span.Name(), side.name, clip(n), side.source, msgErr)
					}
				}
				if ok {
					shown++
				}
			}
		}
	}
	t.Logf("Langfuse chatml sides shown: %d of %d", shown, sides)
	require.Equal(t, 36, sides, "sides with content Langfuse reads (the corpus changed?)")
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// observationSpans maps Langfuse observation ids to imported spans (the span id is the observation id
// when it is 16 hex digits, else langfuse.observation.id holds it).
func observationSpans(td ptrace.Traces) map[string]ptrace.Span {
	out := map[string]ptrace.Span{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				s := ss.At(j).Spans().At(k)
				id := s.SpanID().String()
				if v, ok := s.Attributes().Get("langfuse.observation.id"); ok {
					id = v.AsString()
				}
				out[id] = s
			}
		}
	}
	return out
}
