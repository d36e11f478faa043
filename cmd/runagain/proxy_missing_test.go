// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
		{"rerun", "0123456789abcdef0123456789abcdef", "--set", "model=x", "--", "/nonexistent"},
		{"test", "some-dataset", "--", "/nonexistent"},
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

// TestProxyCommandThatCannotStartStoresNothing: an executable file the kernel cannot run (exec
// format error) passes the PATH check but fails at exec: proxy --record then fails naming it and
// sends no run (no span kept for the unreachable collector).
func TestProxyCommandThatCannotStartStoresNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(bad, []byte{0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := cli(t, map[string]string{"RUNAGAIN_ENDPOINT": "127.0.0.1:1"},
		"--data-dir", dir, "proxy", "--record", "--listen", "127.0.0.1:0", "--", bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "exec format error") {
		t.Fatalf("err %v, want one naming %s and the exec error", err, bad)
	}
	if _, err := os.Stat(filepath.Join(dir, "proxy-unsent.otlp.jsonl")); err == nil {
		t.Error("a run was kept for a command that never started")
	}
}

// TestProxyExitsWithTheCommandsStatus: `proxy --record -- CMD` ends with CMD's own status (the
// commandExit error main turns into os.Exit), 128+N when signal N killed it, named in the message.
func TestProxyExitsWithTheCommandsStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		says   string
	}{
		{"exit 7", 7, "exited with code 7"},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL), "killed by signal killed"},
	} {
		dir := t.TempDir()
		_, _, err := cli(t, map[string]string{"RUNAGAIN_ENDPOINT": "127.0.0.1:1"},
			"--data-dir", dir, "proxy", "--record", "--listen", "127.0.0.1:0", "--", "/bin/sh", "-c", tc.script)
		var ce *commandExit
		if !errors.As(err, &ce) {
			t.Fatalf("%s: err %v, want the command's exit", tc.script, err)
		}
		if ce.exit.Code != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: exit %d %q, want %d saying %q", tc.script, ce.exit.Code, err, tc.code, tc.says)
		}
	}
}
