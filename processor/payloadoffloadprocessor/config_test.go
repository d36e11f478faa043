// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig().(*Config)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	def, err := loadConfig(t, "")
	if err != nil {
		t.Fatalf("default: %v", err)
	}
	if !equalConfig(def, createDefaultConfig().(*Config)) {
		t.Fatalf("default config:\n got %+v\nwant the defaults", def)
	}
	if def.MinSize != 4096 || def.OnFailure != OnFailureKeepInline || !def.LogBody || len(def.Keys) != len(DefaultKeys) {
		t.Fatalf("defaults changed: %+v", def)
	}

	full, err := loadConfig(t, "full")
	if err != nil {
		t.Fatalf("full: %v", err)
	}
	if full.Storage.Extension.String() != "runagain_storage/payloads" || full.Storage.Timeout != 3*time.Second || full.Storage.Cooldown != time.Second ||
		full.MinSize != 1024 || full.LogBody || full.OnFailure != OnFailureReject || full.Concurrency != 8 || len(full.Keys) != 2 || full.Keys[1] != "my.app.*" ||
		len(full.SplitKeys) != 1 || full.RetryOnFailure.MaxElapsedTime != 2*time.Second || full.RetryOnFailure.InitialInterval != 50*time.Millisecond {
		t.Fatalf("full config not loaded as written: %+v", full)
	}

	if _, err := loadConfig(t, "inline_url"); err == nil || !strings.Contains(err.Error(), "url") {
		t.Fatalf("inline storage.url: got %v, want it refused, named", err)
	}
}

func equalConfig(a, b *Config) bool {
	return a.Storage == b.Storage && strings.Join(a.Keys, ",") == strings.Join(b.Keys, ",") &&
		strings.Join(a.SplitKeys, ",") == strings.Join(b.SplitKeys, ",") && a.MinSize == b.MinSize &&
		a.LogBody == b.LogBody && a.OnFailure == b.OnFailure && a.RetryOnFailure == b.RetryOnFailure &&
		a.Concurrency == b.Concurrency
}

// TestValidateNamesFields checks that each invalid setting is reported with its field name.
func TestValidateNamesFields(t *testing.T) {
	cases := map[string][]string{
		"bad_values": {"storage.timeout", "storage.cooldown", "keys[0]", "split_keys[0]", "min_size", "on_failure", "concurrency", "retry_on_failure.max_elapsed_time"},
		"no_keys":    {"keys: at least one"},
	}
	for name, fields := range cases {
		_, err := loadConfig(t, name)
		if err == nil {
			t.Errorf("%s: validated", name)
			continue
		}
		for _, f := range fields {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("%s: error %q does not name %q", name, err, f)
			}
		}
	}
}

// TestKeyMatcher checks exact keys and globs (where * crosses dots) against the defaults.
func TestKeyMatcher(t *testing.T) {
	m, err := newKeyMatcher(DefaultKeys)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{
		"gen_ai.input.messages":                 true,
		"gen_ai.input.messages.extra":           false,
		"gen_ai.prompt.0.content":               true,
		"gen_ai.completion.3.tool_calls.0.args": true,
		"gen_ai.prompt":                         true,
		"gen_ai.request.model":                  false,
		"llm.input_messages.2.message.content":  true,
		"llm.model_name":                        false,
		"ai.prompt":                             true,
		"ai.prompt.messages":                    true,
		"ai.response.text":                      true,
		"ai.model.id":                           false,
		"input.value":                           true,
		"input.mime_type":                       false,
		"http.request.body":                     true,
		"http.response.body.content":            true,
	} {
		if got := m.Match(k); got != want {
			t.Errorf("Match(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestStoreFromStorageExtension: the processor writes through the payload store of the
// runagain_storage extension, and without one (or without its payloads) it refuses to start,
// naming storage.extension and payloads::url.
func TestStoreFromStorageExtension(t *testing.T) {
	ctx := context.Background()
	cfg, err := loadConfig(t, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewFactory().CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, componenttest.NewNopHost()); err == nil || !strings.Contains(err.Error(), "storage.extension: no runagain_storage extension") ||
		!strings.Contains(err.Error(), "payloads::url") {
		t.Fatalf("start without extension: got %v, want an error naming storage.extension and payloads::url", err)
	}
	noPayloads, _ := storagetest.Start(t, runagainstorageextension.NewDefaultConfig())
	if err := p.Start(ctx, noPayloads); err == nil || !strings.Contains(err.Error(), "payloads::url") {
		t.Fatalf("start with an extension without payloads: got %v, want an error naming payloads::url", err)
	}

	dir := t.TempDir()
	sc := runagainstorageextension.NewDefaultConfig()
	sc.Payloads = configoptional.Some(runagainstorageextension.PayloadsConfig{URL: "file://" + dir + "?metadata=skip"})
	host, _ := storagetest.Start(t, sc)
	cfg.MinSize = 10
	p, err = NewFactory().CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx) //nolint:errcheck
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"hello from the extension's bucket"}]}]`)
	if err := p.ConsumeTraces(ctx, td); err != nil {
		t.Fatal(err)
	}
	ref, ok := sp.Attributes().Get("gen_ai.input.messages_ref")
	if !ok || !strings.HasPrefix(ref.Str(), "file://"+dir) {
		t.Fatalf("gen_ai.input.messages_ref = %v, want an object under the extension's bucket %s", ref.AsRaw(), dir)
	}
}
