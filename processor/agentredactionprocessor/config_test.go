// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig()
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg.(*Config), confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, createDefaultConfig(), cfg)

	cfg, err = loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", string(cfg.HashKey))
	assert.Equal(t, redact.ActionMask, cfg.PIIAction)
	assert.Equal(t, map[string]redact.Action{"us_ssn": redact.ActionDrop, "email": redact.ActionHash}, cfg.RuleActions)
	assert.Equal(t, []string{"ipv4_address", "ipv6_address"}, cfg.DisabledRules)
	assert.Equal(t, []string{"gen_ai.response.id"}, cfg.IgnoredKeys)
	assert.Equal(t, 64, cfg.CleanCacheMiB)
	assert.Equal(t, 500, cfg.RepeatedSecretTraces)
	require.Len(t, cfg.CustomRules, 2)
	assert.Equal(t, redact.CustomRule{Name: "employee_id", Regex: `EMP-(?P<value>\d{6})`, Keywords: []string{"EMP-"}, Category: redact.CategoryPII}, cfg.CustomRules[0])
	assert.Equal(t, "luhn", cfg.CustomRules[1].Validator)
	assert.Equal(t, redact.ActionDrop, cfg.CustomRules[1].Action)

	cfg, err = loadConfig(t, "sealed")
	require.NoError(t, err)
	assert.Equal(t, SealConfig{KeyDir: "/var/lib/runagain/keys", KeyEnv: "RUNAGAIN_SEAL_KEY", KeyFile: "/etc/runagain/seal.key", DataDir: "/var/lib/runagain"}, cfg.SealOriginals)
}

func TestLoadInvalidConfig(t *testing.T) {
	for name, field := range map[string]string{
		"bad_regex":    "custom_rules[0].regex",
		"bad_action":   "rule_actions[email]",
		"bad_rule":     "disabled_rules",
		"bad_env":      "hash_key_env",
		"bad_seal":     "seal_originals.key_dir",
		"bad_seal_env": "seal_originals.key_env",
		"bad_cache":    "clean_cache_mib",
		"bad_repeat":   "repeated_secret_traces: -5",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), field)
		})
	}
}

// TestShippedConfigs: the agent_redaction section of every shipped pipeline config
// (config/*.yaml) unmarshals into Config and validates.
func TestShippedConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no config/*.yaml: the shipped configurations are part of this repository")
	seen := 0
	for _, f := range files {
		before := seen
		cm, err := confmaptest.LoadConf(f)
		require.NoError(t, err)
		procs, err := cm.Sub("processors")
		require.NoError(t, err)
		for key := range procs.ToStringMap() {
			id := component.ID{}
			require.NoError(t, id.UnmarshalText([]byte(key)))
			if id.Type() != metadata.Type {
				continue
			}
			seen++
			sub, err := procs.Sub(key)
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig()
			require.NoError(t, sub.Unmarshal(cfg), "%s: %s", f, key)
			require.NoError(t, confmap.Validate(cfg), "%s: %s", f, key)
		}
		// Every shipped pipeline redacts before it stores: a config without the section fails.
		assert.Greater(t, seen, before, "%s has no agent_redaction processor", f)
	}
	t.Logf("%d agent_redaction sections in %d files", seen, len(files))
}
