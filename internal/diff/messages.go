// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// The messages of an LLM call: the shared model of internal/genai (docs/architecture.md "The messages of an
// LLM call"), so the diff compares exactly what `show --step N` shows.
type (
	Part         = genai.Part
	Message      = genai.Message
	Source       = genai.Source
	CallMessages = genai.CallMessages
)

// MessagesFunc builds the messages of one LLM span (genai.LLMCallMessages' signature). An error
// does not stop the diff: the messages read so far are compared and the step carries the error
// (Step.MessagesError).
type MessagesFunc func(span ptrace.Span, logs []plog.LogRecord) (CallMessages, error)

// callMessages is the default MessagesFunc.
var callMessages MessagesFunc = genai.LLMCallMessages

// jsonValue decodes s as JSON, or returns s itself when it is not JSON.
func jsonValue(s string) any { return genai.JSONValue(s) }
