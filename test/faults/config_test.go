// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// variant writes config/default.yaml with old replaced by new (once, old must occur) and returns its path.
func variant(t *testing.T, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	require.NoError(t, err)
	s := string(b)
	require.Contains(t, s, old)
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(s, old, new, 1)), 0o600))
	return p
}

// TestValidateNamesTheField: `otelcol-runagain validate --config` fails on each mistake below,
// naming the field (and the tier), instead of failing later at start without one or wrapping.
func TestValidateNamesTheField(t *testing.T) {
	bin := collectortest.BinDir(t)
	notDir := filepath.Join(t.TempDir(), "a-file") // a regular file where a directory must be
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	for name, tc := range map[string]struct{ old, new, want string }{
		"hot sqlite path the collector cannot create": {"path: ${env:RUNAGAIN_DATA_DIR:-./data}/hot.db", "path: " + notDir + "/hot.db",
			`hot::sqlite::path "` + notDir + `/hot.db": stat ` + notDir + `/hot.db: not a directory`},
		"storage typo in the warm tier's queue": {"storage: file_storage/queue", "storage: file_storage/qeue",
			`exporters::tiered::warm::sending_queue::storage: "file_storage/qeue" is not an extension declared under`},
		"cold parquet url with an unknown scheme": {"url: ${env:RUNAGAIN_DATA_DIR:-./data}/cold", "url: s4://runagain-cold",
			`cold::parquet::url: scheme "s4" not supported`},
		"huge min_size": {"min_size: 2048", "min_size: 1e30",
			"exporters::tiered::warm::sending_queue::batch::min_size: 1e+30 is out of range"},
		"payload_offload's bucket set inline (the older form)": {"payload_offload: {}", "payload_offload: {storage: {url: 'file:///tmp/blobs'}}",
			"processors::payload_offload::storage::url: moved to the runagain_storage extension: set `extensions::runagain_storage::payloads::url`"},
		"a tier's backend set inline in tiered (the older form)": {"  tiered:\n    hot:\n", "  tiered:\n    hot:\n      sqlite: {path: /tmp/hot.db}\n",
			"exporters::tiered::hot::sqlite: moved to the runagain_storage extension: set `extensions::runagain_storage::hot::sqlite`"},
		"agent_guard's pricing (the older form)": {"agent_guard: {}", "agent_guard: {pricing: {models: [{model: x, input_mtok: 1}]}}",
			"connectors::agent_guard::pricing: moved to the runagain_storage extension: set `extensions::runagain_storage::pricing`"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, "otelcol-runagain"), "validate", "--config", variant(t, tc.old, tc.new))
			cmd.Env = append(os.Environ(), "RUNAGAIN_DATA_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			t.Logf("validate: %s", strings.TrimSpace(string(out)))
			require.Error(t, err, "validate must fail")
			assert.Contains(t, string(out), tc.want)
		})
	}
	// the shipped configuration passes
	cmd := exec.Command(filepath.Join(bin, "otelcol-runagain"), "validate", "--config", filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	cmd.Env = append(os.Environ(), "RUNAGAIN_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
