// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
)

// TestCorpusCassettesDeriveGenAI imports every cassette of the corpus and checks that each
// successful exchange with a known LLM API became an LLM call: model, input messages and output
// messages derived from the recorded bodies (streamed responses reassembled), readable by
// genai.LLMCallMessages; and that each API, streamed and not, occurs in the corpus.
func TestCorpusCassettesDeriveGenAI(t *testing.T) {
	seen := map[string]int{}
	for _, f := range CorpusCassettes(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(f, data)
		if err != nil {
			continue // TestCorpusCassettesImport reports it
		}
		for _, sp := range fixtureSpans(res.Traces) {
			ex, err := fixture.FromSpan(sp)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			api := llmhttp.Detect(ex)
			if api == llmhttp.APINone || api == llmhttp.APIMCPToolsCall || ex.Status != 200 {
				continue
			}
			key := string(api)
			if ex.Chunks != nil {
				key += " (streamed)"
			}
			seen[key]++
			a := sp.Attributes()
			name := filepath.Base(f) + " " + key
			derived, _ := a.Get(genai.AttrDerived)
			if !assert.True(t, derived.Bool(), "%s: not derived", name) {
				continue
			}
			assert.Equal(t, genai.KindLLM, genai.Classify(a), name)
			assert.NotEmpty(t, genai.Model(a), "%s: no model", name)
			cm, err := genai.LLMCallMessages(sp, nil)
			assert.NoError(t, err, name)
			if json.Valid(ex.RequestBody) { // some serializers keep no request body
				assert.Equal(t, genai.SourceAttributes, cm.InputSource, "%s: no input messages", name)
				assert.NotEmpty(t, cm.Input, "%s: no input messages", name)
			}
			var resp map[string]any
			_ = json.Unmarshal(ex.ResponseBody, &resp)
			if ex.Chunks != nil || resp["choices"] != nil || resp["content"] != nil || resp["candidates"] != nil || resp["output"] != nil {
				// (a 200 carrying an error object, plain text or a test's echo has no output)
				assert.Equal(t, genai.SourceAttributes, cm.OutputSource, "%s: no output messages", name)
			}
		}
	}
	t.Logf("exchanges by API: %v", seen)
	for _, k := range []string{"openai.chat_completions", "openai.chat_completions (streamed)", "openai.responses",
		"openai.responses (streamed)", "anthropic.messages", "anthropic.messages (streamed)",
		"gemini.generate_content", "gemini.generate_content (streamed)"} {
		assert.Positive(t, seen[k], "no %s exchange in the corpus", k)
	}
}
