// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestRedactionKeyPrivate: the collector creates <data dir>/redaction.key with mode 0600, and
// refuses to start when the key is readable by group or others.
func TestRedactionKeyPrivate(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	key := filepath.Join(c.DataDir, "redaction.key")
	st, err := os.Stat(key)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	c.Stop()

	require.NoError(t, os.Chmod(key, 0o644))
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "otelcol-runagain"), "--config", c.Config)
	cmd.Env = append(os.Environ(),
		"RUNAGAIN_DATA_DIR="+c.DataDir, "RUNAGAIN_REDACTION_KEY=",
		fmt.Sprintf("RUNAGAIN_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_HEALTH_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
	)
	done := make(chan error, 1)
	var out []byte
	go func() { var err error; out, err = cmd.CombinedOutput(); done <- err }()
	select {
	case err := <-done:
		t.Logf("collector with a 0644 key: %s", lastLines(string(out), 1))
		require.Error(t, err)
		assert.Contains(t, string(out), key+" is accessible by group or others (mode 0644)")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the collector started with a redaction key readable by others")
	}
}
