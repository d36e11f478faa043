// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor // import "github.com/runagain/runagain/processor/agentredactionprocessor"

import (
	"errors"
	"fmt"
	"regexp"

	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/seal"
)

// DefaultHashKeyEnv is the environment variable read for the HMAC key when hash_key is empty.
const DefaultHashKeyEnv = "RUNAGAIN_REDACTION_KEY"

// CountAttribute is set on each span and log record the processor changed: the number of values
// it redacted there (span events and links count toward their span).
const CountAttribute = "runagain.redaction.count"

// ChangedAttribute is set on each span whose own attributes the processor changed: a map from
// attribute key to the number of values redacted in it (keys and counts, never values).
const ChangedAttribute = "runagain.redaction.changed"

// Config configures the agent_redaction processor.
type Config struct {
	// HashKey is the HMAC-SHA256 key for action hash. Prefer hash_key_env or ${env:...}.
	HashKey configopaque.String `mapstructure:"hash_key"`
	// HashKeyEnv names the environment variable that holds the key when hash_key is empty
	// (default RUNAGAIN_REDACTION_KEY). Without either, a random key is drawn at start and
	// tokens are stable only for the life of the process.
	HashKeyEnv string `mapstructure:"hash_key_env"`
	// HashKeyFile is a file holding the key (hex), used when neither hash_key nor the variable is
	// set. A missing file is created with a random key (mode 0600), so tokens stay stable across
	// restarts and `runagain replay` (which reads the same file) matches hashed values.
	HashKeyFile string `mapstructure:"hash_key_file"`
	// PIIAction is the default action of PII rules: mask, hash (default) or drop.
	PIIAction redact.Action `mapstructure:"pii_action"`
	// SecretAction is the default action of secret rules: mask (default), hash or drop.
	SecretAction redact.Action `mapstructure:"secret_action"`
	// RuleActions overrides the action per rule name.
	RuleActions map[string]redact.Action `mapstructure:"rule_actions"`
	// DisabledRules turns built-in rules off by name.
	DisabledRules []string `mapstructure:"disabled_rules"`
	// CustomRules adds rules: name, regex, validator, keywords, category, action.
	CustomRules []redact.CustomRule `mapstructure:"custom_rules"`
	// IgnoredKeys are attribute keys whose values are never examined.
	IgnoredKeys []string `mapstructure:"ignored_keys"`
	// SealOriginals, when its key_dir is set, keeps the original of every span attribute value that
	// redaction changes, encrypted with its session's data key (internal/seal), so that replay
	// with access to the key serves the exact recorded bytes.
	SealOriginals SealConfig `mapstructure:"seal_originals"`
	// RefuseInvalidSpans (default true) refuses a traces request holding any span with an
	// all-zero trace_id or span_id (invalid per the OTLP specification, and no tier can store it):
	// the whole request is answered with a permanent error naming the reason (OTLP gRPC
	// INVALID_ARGUMENT, HTTP 400), counted in processor_agent_redaction_refused_spans, and nothing
	// of it is kept. Core v0.165's otlp receiver cannot answer with partial success from a
	// pipeline component, so refusing the whole request is the only answer that never
	// acknowledges a span and then drops it. A pipeline with the span_quarantine processor after
	// this one turns it off: span_quarantine keeps the valid spans and quarantines the others.
	RefuseInvalidSpans bool `mapstructure:"refuse_invalid_spans"`
	// CleanCacheMiB bounds the memory of the redaction cache (redact.CleanCache), in MiB (default
	// 8, about 50,000 strings); 0 turns it off. It remembers whole attribute values found clean
	// (of at least 64 bytes, or with digits that make the digit rules run), JSON array elements
	// and runs of elements (a resent history is one run), and JSON string leaves of at least 64
	// bytes, and the edits of those with findings (offsets and replacement tokens), as 128-bit
	// hashes, never the values. Agents resend the
	// conversation with every LLM call, so most message strings have been examined before: with
	// the cache they are hashed and looked up instead of scanned again.
	CleanCacheMiB int `mapstructure:"clean_cache_mib"`
	// RepeatedSecretTraces is how many traces' secrets are remembered (default 10000, an LRU;
	// 0: none). A value a secret rule takes anywhere in a request is replaced by the same token
	// wherever else it stands in that request; remembered for its trace (its first 32), it is
	// also replaced where a later request of the trace repeats it (an assistant answer echoing
	// the password it was given), in the traces and the logs pipelines alike (they share the
	// memory). The values stay in the collector's memory only.
	RepeatedSecretTraces int `mapstructure:"repeated_secret_traces"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// SealConfig configures sealed originals (opt-in: on when key_dir is set).
type SealConfig struct {
	// KeyDir holds the wrapped per-session data keys (and, without keeper_url, the local master
	// key master.key); `runagain replay` and `runagain delete --session` read the same directory
	// ($RUNAGAIN_SEAL_KEY_DIR, else <data dir>/keys). Empty (the default) turns sealing off:
	// redacted values are then gone for good.
	KeyDir string `mapstructure:"key_dir"`
	// KeeperURL is a gocloud.dev/secrets URL of the master key that wraps the data keys (a KMS
	// for a gateway: awskms://, gcpkms://, azurekeyvault://, hashivault://); empty means a local
	// key (key_env, else key_file).
	KeeperURL string `mapstructure:"keeper_url"`
	// KeyEnv names the environment variable holding the local master key (base64 of 32 bytes;
	// default RUNAGAIN_SEAL_KEY); used when set and non-empty.
	KeyEnv string `mapstructure:"key_env"`
	// KeyFile is the file holding the local master key (created with a random key, mode 0600, when
	// missing); empty means key_dir/master.key. It must lie outside data_dir.
	KeyFile string `mapstructure:"key_file"`
	// DataDir is the collector's data directory: a key file inside it is refused at start, naming
	// both paths (whoever holds the data directory would hold the key that opens it).
	DataDir string `mapstructure:"data_dir"`
	// AllowKeyInDataDir accepts a key file inside data_dir (a test machine, an encrypted disk).
	AllowKeyInDataDir bool `mapstructure:"allow_key_in_data_dir"`
}

// master is the seal package's view of where the master key comes from.
func (s SealConfig) master() seal.Master {
	return seal.Master{KeeperURL: s.KeeperURL, KeyEnv: s.KeyEnv, KeyFile: s.KeyFile, DataDir: s.DataDir, AllowKeyInDataDir: s.AllowKeyInDataDir}
}

// DefaultCleanCacheMiB is the default of clean_cache_mib: 8 MiB hold about 50,000 verdicts
// (redact.CleanCacheEntryBytes each), the message strings of some thousands of live conversations.
const DefaultCleanCacheMiB = 8

// MaxCleanCacheMiB is the largest clean_cache_mib accepted.
const MaxCleanCacheMiB = 4096

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// redactConfig converts to the detection core's configuration (without the key).
func (c *Config) redactConfig() redact.Config {
	return redact.Config{
		PIIAction:    c.PIIAction,
		SecretAction: c.SecretAction,
		RuleActions:  c.RuleActions,
		Disabled:     c.DisabledRules,
		Custom:       c.CustomRules,
	}
}

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	var errs []error
	rc := c.redactConfig()
	if err := rc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.HashKeyEnv != "" && !envNameRE.MatchString(c.HashKeyEnv) {
		errs = append(errs, fmt.Errorf("hash_key_env: %q is not an environment variable name", c.HashKeyEnv))
	}
	if c.SealOriginals.KeyEnv != "" && !envNameRE.MatchString(c.SealOriginals.KeyEnv) {
		errs = append(errs, fmt.Errorf("seal_originals.key_env: %q is not an environment variable name", c.SealOriginals.KeyEnv))
	}
	if c.SealOriginals.KeeperURL != "" && c.SealOriginals.KeyDir == "" {
		errs = append(errs, errors.New("seal_originals.key_dir: required with seal_originals.keeper_url (the wrapped data keys live there)"))
	}
	if c.CleanCacheMiB < 0 || c.CleanCacheMiB > MaxCleanCacheMiB {
		errs = append(errs, fmt.Errorf("clean_cache_mib: %d is out of range (0 turns the cache off, at most %d)", c.CleanCacheMiB, MaxCleanCacheMiB))
	}
	if c.RepeatedSecretTraces < 0 || c.RepeatedSecretTraces > MaxRepeatedSecretTraces {
		errs = append(errs, fmt.Errorf("repeated_secret_traces: %d is out of range (0 turns the memory off, at most %d)", c.RepeatedSecretTraces, MaxRepeatedSecretTraces))
	}
	for i, k := range c.IgnoredKeys {
		if k == "" {
			errs = append(errs, fmt.Errorf("ignored_keys[%d]: must not be empty", i))
		}
	}
	return errors.Join(errs...)
}
