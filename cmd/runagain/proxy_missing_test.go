// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyMissingCommandFailsAtOnce: `proxy --record -- /nonexistent` fails before it listens
// or records, naming the command, and sends nothing (no span spilled for an unreachable
// collector); replay too.
func TestProxyMissingCommandFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"RUNAGAIN_ENDPOINT": "127.0.0.1:1"}
	for _, args := range [][]string{
		{"proxy", "--record", "--listen", "127.0.0.1:0", "--", "/nonexistent"},
		{"replay", "0123456789abcdef0123456789abcdef", "--", "/nonexistent"},
	} {
		_, stderr, err := cli(t, env, append([]string{"--data-dir", dir}, args...)...)
		if err == nil || !strings.Contains(err.Error(), `"/nonexistent"`) {
			t.Fatalf("%s: err %v, want one naming the command", args[0], err)
		}
		if strings.Contains(stderr, "recording on") || strings.Contains(stderr, "spans") {
			t.Errorf("%s: it started before failing: %s", args[0], stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "proxy-unsent.otlp.jsonl")); err == nil {
		t.Error("a span of the run that never started was kept to send")
	}
}
