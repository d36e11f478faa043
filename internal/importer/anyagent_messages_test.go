// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/genai"
)

// TestAnyAgentOutputsShown: every LLM call of the corpus any-agent traces shows its output, read
// from gen_ai.output: each tool the model asked for (tool.name) as a tool_call part with its
// arguments, or the answer's text as recorded. Before the any-agent reader, all of them said
// "output: not recorded" and a diff of two such runs called differing answers equal.
func TestAnyAgentOutputsShown(t *testing.T) {
	calls := 0
	for _, file := range anyAgentCorpus(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, res := parseCorpusFile(t, file, "any-agent")
			for _, ref := range spansByID(t, res.Traces) {
				a := ref.span.Attributes()
				if op, _ := a.Get(genai.AttrOperationName); op.AsString() != "call_llm" {
					continue
				}
				calls++
				out, ok := a.Get(genai.AttrAnyAgentOutput)
				if !ok {
					t.Fatalf("%s: a call_llm span without gen_ai.output", ref.span.SpanID())
				}
				cm, err := genai.LLMCallMessages(ref.span, nil)
				if err != nil {
					t.Errorf("%s: %v", ref.span.SpanID(), err)
				}
				if cm.OutputSource != genai.SourceAnyAgent || len(cm.Output) != 1 {
					t.Fatalf("%s: output %v from %q, want one message from any_agent", ref.span.SpanID(), cm.Output, cm.OutputSource)
				}
				var want []map[string]any
				if json.Unmarshal([]byte(out.AsString()), &want) == nil && len(want) > 0 && want[0]["tool.name"] != nil {
					parts := cm.Output[0].Parts
					if len(parts) != len(want) {
						t.Fatalf("%s: %d parts, want %d tool calls", ref.span.SpanID(), len(parts), len(want))
					}
					for i, w := range want {
						if parts[i].Type != "tool_call" || parts[i].Name != w["tool.name"] || parts[i].Arguments == nil {
							t.Errorf("%s: part %d %+v, want tool_call %v", ref.span.SpanID(), i, parts[i], w["tool.name"])
						}
					}
					continue
				}
				if got := cm.Output[0].Parts[0].Content; got != out.AsString() || strings.TrimSpace(got) == "" {
					t.Errorf("%s: text %q, want the recorded %q", ref.span.SpanID(), got, out.AsString())
				}
			}
		})
	}
	t.Logf("%d any-agent LLM calls, every output shown", calls)
}
