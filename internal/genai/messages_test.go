// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
)

// messagesCase is one fixture of testdata/messages: a span (attributes and events), the log
// records pointing at it, and the CallMessages expected (as JSON) or the error expected.
type messagesCase struct {
	Attributes map[string]any `json:"attributes"`
	Events     []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
	Logs []struct {
		EventName  string         `json:"event_name"`
		Attributes map[string]any `json:"attributes"`
		Body       any            `json:"body"`
	} `json:"logs"`
	Want      json.RawMessage `json:"want"`
	WantError string          `json:"want_error"`
}

func TestLLMCallMessagesFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/messages/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var c messagesCase
			require.NoError(t, json.Unmarshal(raw, &c))
			span := ptrace.NewSpan()
			require.NoError(t, span.Attributes().FromRaw(c.Attributes))
			for _, e := range c.Events {
				ev := span.Events().AppendEmpty()
				ev.SetName(e.Name)
				require.NoError(t, ev.Attributes().FromRaw(e.Attributes))
			}
			var logs []plog.LogRecord
			for _, l := range c.Logs {
				lr := plog.NewLogRecord()
				lr.SetEventName(l.EventName)
				require.NoError(t, lr.Attributes().FromRaw(l.Attributes))
				if l.Body != nil {
					require.NoError(t, lr.Body().FromRaw(l.Body))
				}
				logs = append(logs, lr)
			}
			got, err := LLMCallMessages(span, logs)
			if c.WantError != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.WantError)
			} else {
				require.NoError(t, err)
			}
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, string(c.Want), string(b))
		})
	}
}

// TestLLMCallMessagesCorpusOpenInference reads the OpenInference fixture of the corpus (a real
// instrumentation's attributes) and checks the tool round trip comes out whole.
func TestLLMCallMessagesCorpusOpenInference(t *testing.T) {
	path := filepath.Join(corpus.Dir(t), "openinference/js/packages/openinference-genai/test/__fixtures__/openinference_client_span_tool_calls.json")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var attrs map[string]any
	require.NoError(t, json.Unmarshal(raw, &attrs))
	span := ptrace.NewSpan()
	require.NoError(t, span.Attributes().FromRaw(attrs))
	got, err := LLMCallMessages(span, nil)
	require.NoError(t, err)
	assert.Equal(t, SourceOpenInference, got.InputSource)
	require.Len(t, got.Input, 3)
	assert.Equal(t, []Part{{Type: "text", Content: "Absolutely! Let me check the weather for you."},
		{Type: "tool_call", ID: "1234", Name: "get_weather", Arguments: map[string]any{"location": "Paris"}}}, got.Input[1].Parts)
	assert.Equal(t, Part{Type: "tool_call_response", ID: "1234", Response: "rainy, 57°F"}, got.Input[2].Parts[0])
	require.Len(t, got.Output, 1)
	assert.Equal(t, "The weather in Paris is currently rainy with a temperature of 57°F.", got.Output[0].Parts[0].Content)
}
