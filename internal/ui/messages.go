// SPDX-License-Identifier: Apache-2.0

package ui

import "github.com/runagain/runagain/internal/genai"

// The messages of an LLM call come from the shared model (COORDINATION.md interface 1,
// docs/architecture.md "The messages of an LLM call"): every view reads them the same way.
type (
	// Part is one part of a message.
	Part = genai.Part
	// Message is one message of an LLM call.
	Message = genai.Message
	// CallMessages is what one LLM call received and returned.
	CallMessages = genai.CallMessages
)

// llmCallMessages is genai.LLMCallMessages (a variable so tests can see what the page renders).
var llmCallMessages = genai.LLMCallMessages
