// SPDX-License-Identifier: Apache-2.0

// Package loadgen generates realistic AI-agent traffic and sends it over OTLP through the
// standard OpenTelemetry Go SDK and its OTLP trace exporters (gRPC or HTTP/protobuf).
//
// A session is a conversation (gen_ai.conversation.id) of Config.Turns user turns; each turn is
// one agent run, i.e. one trace:
//
//	invoke_agent <agent>                      INTERNAL  (root)
//	  chat <model>                            CLIENT    finish_reasons ["tool_calls"]
//	  execute_tool <tool>                     INTERNAL  status ERROR with Config.ToolErrorRate
//	  ... (Config.ToolsPerTurn times)
//	  chat <model>                            CLIENT    finish_reasons ["stop"] or ["length"]
//
// so a turn has 2 + 2*ToolsPerTurn spans. A runaway turn (Config.LoopRate of the sessions, once
// per session) calls the same tool with the same arguments Config.LoopLength times instead.
// Every chat span carries gen_ai.input.messages and gen_ai.output.messages as JSON in the
// OpenTelemetry GenAI semantic-convention shape (role + parts); with Config.ResendHistory the
// input holds the whole conversation so far, as chat-completion APIs require, so payloads grow
// within a session. Message text is drawn from a fixed vocabulary; PII (e-mail addresses,
// phone numbers, Luhn-valid card numbers, mod-97-valid IBANs) and credentials (OpenAI, AWS,
// GitHub keys) are planted with the configured densities.
//
// Generation is deterministic: session i of a run with Config.Seed always has the same content
// (only span/trace IDs and timestamps differ), so two runs drive the same load.
package loadgen

import (
	"errors"
	"fmt"
	"time"
)

// Protocols accepted in Config.Protocol.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http"
)

// Config is the shape of the traffic and how it is sent. Zero values are replaced by the
// defaults of DefaultConfig only through the CLI; Validate rejects out-of-range values.
type Config struct {
	// Sessions is the number of conversations to send; 0 means unbounded (MaxSpans or Duration
	// must then bound the run).
	Sessions int64 `json:"sessions"`
	// Turns is the number of user turns (runs, traces) per session, >= 1.
	Turns int `json:"turns"`
	// ToolsPerTurn is the number of tool calls in a normal turn, >= 0.
	ToolsPerTurn int `json:"tools_per_turn"`
	// MessageBytes is the approximate size in bytes of each generated message text (user
	// message, assistant answer, tool result), >= 16.
	MessageBytes int `json:"message_bytes"`
	// SystemPromptBytes is the size of the system instructions sent with every chat call, >= 0.
	SystemPromptBytes int `json:"system_prompt_bytes"`
	// ResendHistory makes every chat call carry the whole conversation so far in
	// gen_ai.input.messages (chat-completion style); otherwise only the newest messages.
	ResendHistory bool `json:"resend_history"`
	// PIIRate is the probability (0..1) that a generated text holds one PII value.
	PIIRate float64 `json:"pii_rate"`
	// SecretRate is the probability (0..1) that a generated text holds one credential.
	SecretRate float64 `json:"secret_rate"`
	// ToolErrorRate is the probability (0..1) that a tool call fails (span status ERROR,
	// error.type, an exception event).
	ToolErrorRate float64 `json:"tool_error_rate"`
	// LoopRate is the fraction (0..1) of sessions that contain one runaway turn.
	LoopRate float64 `json:"loop_rate"`
	// LoopLength is the number of identical tool calls in a runaway turn, >= 2.
	LoopLength int `json:"loop_length"`
	// LengthRate is the probability (0..1) that a final chat call stops with finish_reason
	// "length" (output truncated at gen_ai.request.max_tokens).
	LengthRate float64 `json:"length_rate"`
	// Seed makes the content reproducible.
	Seed uint64 `json:"seed"`

	// MaxSpans stops the run before a trace would exceed this many spans in total; 0 = no bound.
	MaxSpans int64 `json:"max_spans"`
	// Duration stops starting new traces after this long; 0 = no bound.
	Duration time.Duration `json:"duration"`
	// Rate limits generation to this many spans per second in total; 0 = as fast as the
	// collector accepts (the SDK batch processor blocks instead of dropping).
	Rate float64 `json:"rate"`
	// Concurrency is the number of simulated agent processes: each has its own
	// TracerProvider, batch span processor and OTLP exporter (connection), >= 1.
	Concurrency int `json:"concurrency"`

	// Protocol is "grpc" or "http" (OTLP/HTTP protobuf).
	Protocol string `json:"protocol"`
	// Endpoint is host:port of the OTLP receiver.
	Endpoint string `json:"endpoint"`
	// Insecure sends plaintext (no TLS).
	Insecure bool `json:"insecure"`
	// Compression is "none" or "gzip".
	Compression string `json:"compression"`
	// BatchSize is the SDK batch span processor's maximum export batch size, >= 1.
	BatchSize int `json:"batch_size"`
	// ExportTimeout bounds one export call including the exporter's retries.
	ExportTimeout time.Duration `json:"export_timeout"`
	// ServiceName is the resource service.name of the simulated agents.
	ServiceName string `json:"service_name"`
	// Provider is gen_ai.provider.name; Model is gen_ai.request.model.
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// DefaultConfig is a mid-sized agent: 5 turns of 3 tool calls, 512-byte messages, resent
// history, 5% PII, 2% secrets, 5% tool errors, 2% runaway loops, 3% truncated answers.
func DefaultConfig() Config {
	return Config{
		Sessions:          100,
		Turns:             5,
		ToolsPerTurn:      3,
		MessageBytes:      512,
		SystemPromptBytes: 1024,
		ResendHistory:     true,
		PIIRate:           0.05,
		SecretRate:        0.02,
		ToolErrorRate:     0.05,
		LoopRate:          0.02,
		LoopLength:        20,
		LengthRate:        0.03,
		Seed:              1,
		Duration:          5 * time.Minute,
		Concurrency:       4,
		Protocol:          ProtocolGRPC,
		Endpoint:          "127.0.0.1:4317",
		Insecure:          true,
		Compression:       "none",
		BatchSize:         512,
		ExportTimeout:     30 * time.Second,
		ServiceName:       "loadgen-agent",
		Provider:          "openai",
		Model:             "gpt-4o",
	}
}

// Validate reports every out-of-range field, each error naming its field.
func (c *Config) Validate() error {
	var errs []error
	rate := func(name string, v float64) {
		if v < 0 || v > 1 || v != v {
			errs = append(errs, fmt.Errorf("%s: %v must be between 0 and 1", name, v))
		}
	}
	if c.Sessions < 0 {
		errs = append(errs, fmt.Errorf("sessions: %d must be >= 0", c.Sessions))
	}
	if c.Turns < 1 {
		errs = append(errs, fmt.Errorf("turns: %d must be >= 1", c.Turns))
	}
	if c.ToolsPerTurn < 0 || c.ToolsPerTurn > 1000 {
		errs = append(errs, fmt.Errorf("tools_per_turn: %d must be between 0 and 1000", c.ToolsPerTurn))
	}
	if c.MessageBytes < 16 || c.MessageBytes > 16<<20 {
		errs = append(errs, fmt.Errorf("message_bytes: %d must be between 16 and 16777216", c.MessageBytes))
	}
	if c.SystemPromptBytes < 0 || c.SystemPromptBytes > 16<<20 {
		errs = append(errs, fmt.Errorf("system_prompt_bytes: %d must be between 0 and 16777216", c.SystemPromptBytes))
	}
	rate("pii_rate", c.PIIRate)
	rate("secret_rate", c.SecretRate)
	rate("tool_error_rate", c.ToolErrorRate)
	rate("loop_rate", c.LoopRate)
	rate("length_rate", c.LengthRate)
	if c.LoopLength < 2 || c.LoopLength > 1000 {
		errs = append(errs, fmt.Errorf("loop_length: %d must be between 2 and 1000", c.LoopLength))
	}
	if c.MaxSpans < 0 {
		errs = append(errs, fmt.Errorf("max_spans: %d must be >= 0", c.MaxSpans))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration: %v must be >= 0", c.Duration))
	}
	if c.Sessions == 0 && c.MaxSpans == 0 && c.Duration == 0 {
		errs = append(errs, errors.New("sessions, max_spans, duration: at least one must bound the run"))
	}
	if c.Rate < 0 || c.Rate != c.Rate {
		errs = append(errs, fmt.Errorf("rate: %v must be >= 0", c.Rate))
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("concurrency: %d must be between 1 and 1024", c.Concurrency))
	}
	switch c.Protocol {
	case ProtocolGRPC, ProtocolHTTP:
	default:
		errs = append(errs, fmt.Errorf("protocol: %q must be grpc or http", c.Protocol))
	}
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must not be empty"))
	}
	switch c.Compression {
	case "none", "gzip":
	default:
		errs = append(errs, fmt.Errorf("compression: %q must be none or gzip", c.Compression))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch_size: %d must be >= 1", c.BatchSize))
	}
	if c.ExportTimeout <= 0 {
		errs = append(errs, fmt.Errorf("export_timeout: %v must be > 0", c.ExportTimeout))
	}
	if c.Model == "" {
		errs = append(errs, errors.New("model: must not be empty"))
	}
	if c.Provider == "" {
		errs = append(errs, errors.New("provider: must not be empty"))
	}
	return errors.Join(errs...)
}

// SpansPerTurn is the number of spans of a normal turn: root, tools+1 chat calls, tools.
func (c *Config) SpansPerTurn() int { return 2 + 2*c.ToolsPerTurn }

// maxSpansPerTrace is the largest trace the generator can produce (a runaway turn or a normal one).
func (c *Config) maxSpansPerTrace() int { return 2 + 2*max(c.ToolsPerTurn, c.LoopLength) }
