// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gobwas/glob"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"

	"github.com/runagain/runagain/internal/confdur"
)

// OnFailure says what happens to a value that could not be stored after the bounded retry.
type OnFailure string

const (
	// OnFailureKeepInline keeps the value in place, marks the span or log record with
	// FailedKeysAttr and counts the failure. The data flows on.
	OnFailureKeepInline OnFailure = "keep_inline"
	// OnFailureReject refuses the whole batch (the error goes back to the receiver, so the
	// client or an upstream queue retries it); nothing of the batch is changed.
	OnFailureReject OnFailure = "reject"
)

// DefaultKeys are the attribute keys offloaded by default: GenAI semantic conventions, the older
// flattened gen_ai.prompt.* / gen_ai.completion.*, OpenInference, Vercel AI SDK, Pydantic AI, and
// HTTP bodies recorded by the record/replay proxy.
var DefaultKeys = []string{
	"gen_ai.input.messages",
	"gen_ai.output.messages",
	"gen_ai.system_instructions",
	"gen_ai.tool.definitions",
	"gen_ai.tool.call.arguments",
	"gen_ai.tool.call.result",
	"gen_ai.prompt",
	"gen_ai.completion",
	"gen_ai.prompt.*",
	"gen_ai.completion.*",
	"input.value",
	"output.value",
	"llm.input_messages.*",
	"llm.output_messages.*",
	"ai.prompt*",
	"ai.response.*",
	"pydantic_ai.all_messages",
	"http.request.body*",
	"http.response.body*",
	"runagain.mcp.request*",
	"runagain.mcp.response*",
}

// DefaultSplitKeys are the keys whose JSON values are stored one element per object (conversation
// dedup): message lists, tool definitions, and HTTP bodies (which carry "messages", "input" or
// "contents" arrays).
var DefaultSplitKeys = []string{
	"gen_ai.input.messages",
	"gen_ai.output.messages",
	"gen_ai.system_instructions",
	"gen_ai.tool.definitions",
	"gen_ai.prompt",
	"gen_ai.completion",
	"input.value",
	"output.value",
	"ai.prompt",
	"ai.prompt.messages",
	"ai.prompt.tools",
	"ai.response.messages",
	"pydantic_ai.all_messages",
	"http.request.body*",
	"http.response.body*",
}

// StorageConfig says how values are stored. Where they go is the runagain_storage extension's
// (payloads::url, payloads::dir, payloads::pack, payloads::dedup_cache_size,
// payloads::compression_level): it opens the payload store once and every payload_offload
// instance writes through it.
type StorageConfig struct {
	// Extension is the id of the runagain_storage extension holding the payload store; empty:
	// the only one.
	Extension component.ID `mapstructure:"extension"`
	// Timeout bounds one attempt to store one value (all its objects). Default 10s.
	Timeout time.Duration `mapstructure:"timeout"`
	// Cooldown is how long the storage circuit breaker (github.com/sony/gobreaker) stays open
	// after a batch with a value that failed its whole retry: values meanwhile fail at once
	// (on_failure applies without waiting), so a long outage does not hold every batch for the
	// retry time; then one batch probes storage (half-open) and its outcome closes or reopens the
	// circuit. 0 disables the breaker. Default 5s.
	Cooldown time.Duration `mapstructure:"cooldown"`
}

// Config is the payload_offload processor configuration.
type Config struct {
	Storage StorageConfig `mapstructure:"storage"`
	// Keys are the attribute keys (exact, or glob with * ? [..] {a,b}) whose string values are
	// offloaded, on span, span event and log record attributes. Keys ending in _ref never are.
	Keys []string `mapstructure:"keys"`
	// SplitKeys (a subset of Keys, same syntax) are stored one JSON element per object plus a
	// manifest, so a conversation resending its history stores each message once.
	SplitKeys []string `mapstructure:"split_keys"`
	// MinSize is the smallest value, in bytes, that moves. Default 4096.
	MinSize int `mapstructure:"min_size"`
	// LogBody offloads string log bodies of at least MinSize bytes (to attribute log.body_ref).
	LogBody bool `mapstructure:"log_body"`
	// OnFailure is keep_inline (default) or reject.
	OnFailure OnFailure `mapstructure:"on_failure"`
	// RetryOnFailure bounds the retry of a failed store; max_elapsed_time is the most a batch
	// waits for storage before on_failure applies.
	RetryOnFailure configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// Concurrency is how many values of one batch are stored at once. Default 4.
	Concurrency int `mapstructure:"concurrency"`

	_ struct{} // prevent unkeyed literals
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval = 100 * time.Millisecond
	retry.MaxInterval = 1 * time.Second
	retry.MaxElapsedTime = 5 * time.Second
	return &Config{
		Storage:        StorageConfig{Timeout: 10 * time.Second},
		Keys:           append([]string(nil), DefaultKeys...),
		SplitKeys:      append([]string(nil), DefaultSplitKeys...),
		MinSize:        4096,
		LogBody:        true,
		OnFailure:      OnFailureKeepInline,
		RetryOnFailure: retry,
		Concurrency:    4,
	}
}

// Unmarshal decodes the section; a duration setting whose value is not a duration is an error
// naming its path, the value and what to write, and a key that names no setting is named by its
// path with the nearest setting (internal/confdur: the collector's decoder drops the value from
// its error and names a Go type for an unknown key).
func (c *Config) Unmarshal(conf *confmap.Conf) error { return confdur.Decode(conf, c) }

// Validate checks the configuration; every error names its field.
func (c *Config) Validate() error {
	var errs []error
	if c.Storage.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("storage.timeout: must be positive, got %v", c.Storage.Timeout))
	}
	if c.Storage.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("storage.cooldown: must not be negative, got %v", c.Storage.Cooldown))
	}
	if len(c.Keys) == 0 {
		errs = append(errs, errors.New("keys: at least one key or pattern is required"))
	}
	for i, k := range c.Keys {
		if _, err := compileKey(k); err != nil {
			errs = append(errs, fmt.Errorf("keys[%d]: %w", i, err))
		}
	}
	for i, k := range c.SplitKeys {
		if _, err := compileKey(k); err != nil {
			errs = append(errs, fmt.Errorf("split_keys[%d]: %w", i, err))
		}
	}
	if c.MinSize < 1 {
		errs = append(errs, fmt.Errorf("min_size: must be at least 1 byte, got %d", c.MinSize))
	}
	switch c.OnFailure {
	case OnFailureKeepInline, OnFailureReject:
	default:
		errs = append(errs, fmt.Errorf("on_failure: %q is not keep_inline or reject", c.OnFailure))
	}
	if err := c.RetryOnFailure.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("retry_on_failure: %w", err))
	}
	if c.RetryOnFailure.Enabled && c.RetryOnFailure.MaxElapsedTime <= 0 {
		errs = append(errs, errors.New("retry_on_failure.max_elapsed_time: must be positive: the retry must be bounded"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency: must be at least 1, got %d", c.Concurrency))
	}
	return errors.Join(errs...)
}

// keyMatcher matches attribute keys: exact strings, or globs where * matches any run of characters (dots included).
type keyMatcher struct {
	exact map[string]struct{}
	globs []glob.Glob
}

func compileKey(k string) (glob.Glob, error) {
	if strings.TrimSpace(k) == "" {
		return nil, errors.New("empty key")
	}
	g, err := glob.Compile(k)
	if err != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", k, err)
	}
	return g, nil
}

func newKeyMatcher(keys []string) (*keyMatcher, error) {
	m := &keyMatcher{exact: map[string]struct{}{}}
	for _, k := range keys {
		if !strings.ContainsAny(k, "*?[{\\") {
			m.exact[k] = struct{}{}
			continue
		}
		g, err := compileKey(k)
		if err != nil {
			return nil, err
		}
		m.globs = append(m.globs, g)
	}
	return m, nil
}

func (m *keyMatcher) Match(k string) bool {
	if _, ok := m.exact[k]; ok {
		return true
	}
	for _, g := range m.globs {
		if g.Match(k) {
			return true
		}
	}
	return false
}
