// SPDX-License-Identifier: Apache-2.0

// Package agentredactionprocessor implements the agent_redaction processor: it removes personal
// data and credentials from resource, span, span event, span link and log attributes and from
// log bodies, looking inside JSON-valued strings (gen_ai.input.messages and the like) and editing
// only the redacted bytes. Detection is package internal/redact.
//
//go:generate go tool mdatagen metadata.yaml
package agentredactionprocessor // import "github.com/runagain/runagain/processor/agentredactionprocessor"
