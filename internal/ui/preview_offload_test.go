// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// llmCalls returns the LLM call spans of r, in order.
func llmCalls(r ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	spans := r.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		if v, ok := spans.At(i).Attributes().Get("gen_ai.operation.name"); ok && v.Str() == "chat" {
			out = append(out, spans.At(i))
		}
	}
	return out
}

// offload moves span's attribute key to a file under dir and leaves its reference, as
// payload_offload leaves one (the file is an object the resolver returns as stored).
func offload(t *testing.T, dir string, span ptrace.Span, key, name string) {
	t.Helper()
	v, ok := span.Attributes().Get(key)
	require.True(t, ok, key)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(v.Str()), 0o644))
	span.Attributes().Remove(key)
	span.Attributes().PutStr(key+"_ref", "file://"+path)
}

// TestPreviewOfOffloadedMessages: the sessions page previews a run whose first input and last
// output were offloaded to the payload store with those messages, fetched; when the last
// output's payload cannot be read, the preview shows no outcome rather than an earlier call's.
func TestPreviewOfOffloadedMessages(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := synthRun(1, start, 8, "refund order 1234 please")
	calls := llmCalls(r.Traces)
	require.GreaterOrEqual(t, len(calls), 2)
	last := calls[len(calls)-1]
	last.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"refund issued for 1234"}],"finish_reason":"stop"}]`)
	offload(t, dir, calls[0], "gen_ai.input.messages", "in.json")
	offload(t, dir, last, "gen_ai.output.messages", "out.json")

	broken := synthRun(2, start.Add(time.Minute), 8, "where is my parcel")
	bc := llmCalls(broken.Traces)
	bl := bc[len(bc)-1]
	bl.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"the parcel is in transit"}]}]`)
	offload(t, dir, bl, "gen_ai.output.messages", "gone.json")
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.json")))

	_, ts := newTestServer(t, r, broken)
	code, body := get(t, ts.URL+"/")
	require.Equal(t, 200, code)
	assert.Contains(t, body, "▸ refund order 1234 please", "the offloaded first input")
	assert.Contains(t, body, "◂ refund issued for 1234", "the offloaded last output")
	assert.Contains(t, body, "▸ where is my parcel")
	assert.NotContains(t, body, "◂ ok", "an earlier call's output stood in for one that could not be read")
}

// TestNoUsageRunCost: a run whose calls record no usage and no cost shows its cost as "-", as
// `runagain sessions` does, not as "$0" (a priced run that cost nothing).
func TestNoUsageRunCost(t *testing.T) {
	r := synthRun(3, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5, "hello")
	for _, s := range llmCalls(r.Traces) {
		s.Attributes().Remove("gen_ai.usage.input_tokens")
		s.Attributes().Remove("gen_ai.usage.output_tokens")
	}
	_, ts := newTestServer(t, r)
	_, body := get(t, ts.URL+"/")
	assert.Contains(t, body, `<td class="num">0 / 0</td>`)
	assert.Contains(t, body, `<td class="num">-</td>`)
	assert.NotContains(t, body, `<td class="num">$0</td>`)
}
