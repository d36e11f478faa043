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

// TestSecondCollectorOnSameDataDir: a second collector started on a data directory in use exits
// at once (well before file_storage's lock timeout would), naming the process that holds it.
func TestSecondCollectorOnSameDataDir(t *testing.T) {
	first := collectortest.Start(t, collectortest.Options{})
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "otelcol-runagain"), "--config", first.Config)
	cmd.Env = append(os.Environ(),
		"RUNAGAIN_DATA_DIR="+first.DataDir,
		fmt.Sprintf("RUNAGAIN_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_HEALTH_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", collectortest.FreePort(t)),
		fmt.Sprintf("RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
	)
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("second collector: %s", lastLines(string(out), 3))
		require.Error(t, err, "the second collector must not run")
		assert.Contains(t, string(out), fmt.Sprintf("is locked by pid %d", first.Pid()))
		assert.Contains(t, string(out), filepath.Join(first.DataDir, "LOCK"))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the second collector on the same data directory is still running after 60 s")
	}
	// the first one is unharmed
	first.Restart()
}
