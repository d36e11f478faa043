// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/runagain/runagain/extension/runagainstorageextension"
)

// TestWarnMissingHot: a --config whose hot SQLite file is missing while its warm file exists (a
// path that is not the collector's) is said on stderr; both present, or neither, says nothing.
func TestWarnMissingHot(t *testing.T) {
	dir := t.TempDir()
	hot, warm := filepath.Join(dir, "nope", "hot.db"), filepath.Join(dir, "warm.db")
	cfg := runagainstorageextension.NewDefaultConfig()
	cfg.Hot = configoptional.Some(runagainstorageextension.HotConfig{SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: hot})})
	cfg.Warm = configoptional.Some(runagainstorageextension.WarmConfig{SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: warm})})

	var out bytes.Buffer
	warnMissingHot(&out, cfg)
	if out.Len() != 0 {
		t.Fatalf("neither file exists (a fresh data directory) but it warned: %s", out.String())
	}
	if err := os.WriteFile(warm, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	warnMissingHot(&out, cfg)
	if !strings.Contains(out.String(), hot) || !strings.Contains(out.String(), "hot::sqlite::path") {
		t.Fatalf("missing hot tier not named: %q", out.String())
	}
	out.Reset()
	if err := os.MkdirAll(filepath.Dir(hot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hot, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	warnMissingHot(&out, cfg)
	if out.Len() != 0 {
		t.Fatalf("both tiers exist but it warned: %s", out.String())
	}
}
