// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/payloadref/packfile"
)

// conversation generates an agent conversation of turns LLM calls: every call resends the system
// instructions, the tool definitions and the whole history (user turns, assistant answers with
// tool calls, tool results), as GenAI semantic-convention JSON. Text is drawn from a fixed
// vocabulary with a seeded generator, so it compresses like prose, not like repeated bytes.
type conversation struct {
	rng     *rand.Rand
	vocab   []string
	history []map[string]any
}

func newConversation(seed uint64) *conversation {
	c := &conversation{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := 0; i < 3000; i++ {
		n := 2 + c.rng.IntN(9)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + c.rng.IntN(26))
		}
		c.vocab = append(c.vocab, string(b))
	}
	return c
}

func (c *conversation) text(minLen, maxLen int) string {
	n := minLen + c.rng.IntN(maxLen-minLen+1)
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.vocab[c.rng.IntN(len(c.vocab))])
	}
	return b.String()
}

func textMsg(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "content": text}}}
}

// turn appends one step (user message or tool result, then the assistant's answer) and returns
// the attributes of the LLM call span: its input is the history before the answer.
func (c *conversation) turn(i int, system, tools string) map[string]string {
	if i%3 == 0 {
		c.history = append(c.history, textMsg("user", c.text(200, 800)))
	} else {
		c.history = append(c.history, map[string]any{"role": "tool", "parts": []any{map[string]any{
			"type": "tool_call_response", "id": fmt.Sprintf("call_%d", i), "response": c.text(1000, 4000)}}})
	}
	input, _ := json.Marshal(c.history)
	answer := map[string]any{"role": "assistant", "parts": []any{
		map[string]any{"type": "text", "content": c.text(100, 600)},
		map[string]any{"type": "tool_call", "id": fmt.Sprintf("call_%d", i+1), "name": "search", "arguments": map[string]any{"query": c.text(20, 80)}},
	}, "finish_reason": "tool_call"}
	output, _ := json.Marshal([]any{answer})
	c.history = append(c.history, answer)
	return map[string]string{
		"gen_ai.system_instructions": system,
		"gen_ai.tool.definitions":    tools,
		"gen_ai.input.messages":      string(input),
		"gen_ai.output.messages":     string(output),
	}
}

// storedBytes sums the sizes of the objects under dir.
func storedBytes(t *testing.T, dir string) (int64, int) {
	var total int64
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, n
}

// runConversation sends a 100-turn conversation through a processor with the given split keys
// to file:// storage and returns the inline bytes (sum of the sizes of the values offloaded) and
// the bytes on disk after every turn (bucket plus staging area: the staged pack holds the objects
// raw until it is sealed), and the bytes at rest: the bucket once the processor shut down (the
// pack sealed, compressed in blocks and uploaded).
func runConversation(t *testing.T, splitKeys []string) (inline int64, stored []int64, objects int, atRest int64) {
	dir := t.TempDir()
	cfg := testConfig("file://" + dir + "?create_dir=true&metadata=skip")
	cfg.SplitKeys = splitKeys
	// The pack layout: objects are appended to a staged pack; what is stored is the bucket plus
	// the staging area (the digest index, metadata like a file system's, is not counted).
	cfg.payloads.Dir = filepath.Join(t.TempDir(), "payloads")
	staging := filepath.Join(cfg.payloads.Dir, packfile.StagingDir)
	h := newHarness(t, cfg)
	conv := newConversation(42)
	sys := []any{map[string]any{"type": "text", "content": conv.text(4500, 6000)}}
	system, _ := json.Marshal(sys)
	var tools []any
	for i := 0; i < 8; i++ {
		tools = append(tools, map[string]any{"type": "function", "name": fmt.Sprintf("tool_%d", i), "description": conv.text(200, 500),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string", "description": conv.text(50, 100)}}}})
	}
	toolDefs, _ := json.Marshal(tools)
	for i := 0; i < 100; i++ {
		attrs := conv.turn(i, string(system), string(toolDefs))
		td := ptrace.NewTraces()
		s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName("chat")
		for k, v := range attrs {
			s.Attributes().PutStr(k, v)
			if len(v) >= cfg.MinSize {
				inline += int64(len(v))
			}
		}
		if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
			t.Fatal(err)
		}
		n, _ := storedBytes(t, dir)
		m, _ := storedBytes(t, staging)
		stored = append(stored, n+m)
	}
	// Every input of every turn comes back byte for byte.
	all := h.tsink.AllTraces()
	for i, td := range all {
		s := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		if err := h.res.RehydrateSpan(context.Background(), s); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	last := all[len(all)-1].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	want, _ := json.Marshal(conv.history[:len(conv.history)-1])
	if v, _ := last.Get("gen_ai.input.messages"); v.Str() != string(want) {
		t.Fatal("last turn's input messages not rehydrated byte for byte")
	}
	if h.metric("values_offloaded") < 290 {
		t.Fatalf("only %d values offloaded", h.metric("values_offloaded"))
	}
	h.stop()
	atRest, objects = storedBytes(t, dir)
	_, m := storedBytes(t, staging)
	return inline, stored, objects + m - 1, atRest // the staging area's LOCK file is not an object
}

// TestConversationStorage: a 100-turn conversation that resends its history every turn stores at
// most 10% of its inline bytes, and storage grows linearly with the messages (the second 50
// turns add about as much as the first 50, not three times as much as quadratic growth would).
// Without splitting (whole values only) it is logged for comparison.
func TestConversationStorage(t *testing.T) {
	inline, stored, objects, total := runConversation(t, DefaultSplitKeys)
	ratio := float64(total) / float64(inline)
	firstHalf, secondHalf := stored[49], stored[99]-stored[49]
	t.Logf("100 turns: inline %d bytes, stored %d bytes in %d objects = %.2f%% of inline (staged raw before the upload: %d); first 50 turns %d bytes, last 50 turns %d bytes",
		inline, total, objects, 100*ratio, stored[99], firstHalf, secondHalf)
	if ratio > 0.10 {
		t.Fatalf("stored %.2f%% of the inline bytes, want at most 10%%", 100*ratio)
	}
	if float64(secondHalf) > 1.5*float64(firstHalf) {
		t.Fatalf("last 50 turns stored %d bytes, first 50 %d: growth is not linear", secondHalf, firstHalf)
	}

	inlineW, _, objectsW, totalW := runConversation(t, nil)
	t.Logf("without split_keys: stored %d bytes in %d objects = %.2f%% of inline %d", totalW, objectsW, 100*float64(totalW)/float64(inlineW), inlineW)
	if inlineW != inline || totalW <= total {
		t.Fatalf("whole-value storage (%d bytes) should exceed split storage (%d bytes) for the same conversation", totalW, total)
	}
}
