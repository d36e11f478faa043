// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestSealingKeepsNoCredential (issue 33): the real collector, config/default.yaml with sealing
// on and the master key in a file outside the data directory. A recorded exchange carries four
// distinct credential headers (Authorization, Proxy-Authorization, Cookie, X-Api-Key), a
// Set-Cookie and a SigV4 presigned query (credential, security token, signature), and PII in its
// response. No credential value is in any file of the data directory (raw or inside zstd frames),
// nor in what the sealed originals decrypt to; the PII comes back from them (the sealing works).
func TestSealingKeepsNoCredential(t *testing.T) {
	dataDir := t.TempDir()
	keyDir := filepath.Join(dataDir, "keys")
	keyFile := filepath.Join(t.TempDir(), "seal.key")
	c := collectortest.Start(t, collectortest.Options{DataDir: dataDir, Env: []string{"RUNAGAIN_SEAL_KEY_DIR=" + keyDir, seal.DefaultKeyFileEnv + "=" + keyFile}})
	file, err := filepath.Abs("testdata/credentials_wiremock.json")
	require.NoError(t, err)
	res, err := importer.ParseFile(file)
	require.NoError(t, err)
	traceID := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	credentials := []string{
		"rk9QvT3mXw7LzP2nB8cY5dF1gH4jK6sA0eU",                              // Authorization: Bearer
		"Z2F0ZXdheTpUN3FXbTJ4UHo5dkwza1I=",                                 // Proxy-Authorization: Basic
		"Hq8Zt2Lm5Xv9Rc3Nw7Kb1Pd4",                                         // Cookie
		"Wm4Tq8Zr2Lx6Pv0Nc3Hb7Kd9Sf1Gj5Ya",                                 // X-Api-Key
		"Jt6Yw1Rn8Qs3Vm5Xp0Lc2Kz9",                                         // Set-Cookie
		"AKIAZ5QW3HN7PL2RT2NQ",                                             // X-Amz-Credential
		"IQoJb3JpZ2luX2VjEJr9Qm7XkLp2Wn4Rt8YzH3vB6nD1",                     // X-Amz-Security-Token
		"9d3c5a7e1b2f4d6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a", // X-Amz-Signature
	}
	pii := "ana.lima@example.org"
	var sent string // what the import sends: every credential is in it
	for i := 0; i < res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().Len(); i++ {
		sent += fmt.Sprint(res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(i).Attributes().AsRaw())
	}
	for _, v := range credentials {
		require.Contains(t, sent, v, "the cassette does not carry the credential to the collector")
	}

	cli(t, c, "import", "--endpoint", c.GRPC, file)
	c.Stop()
	hits, files, _ := scanDir(t, dataDir, append([]string{pii, "paid by card"}, credentials...))
	for _, v := range append([]string{pii}, credentials...) {
		assert.Empty(t, hits[v], "%q in clear in %v", v, hits[v])
	}
	assert.NotEmpty(t, hits["paid by card"], "the scan reads where the values were sent: it would find them")
	assert.Greater(t, files, 2)

	run, keys := hotRunAndKeys(t, dataDir, traceID, keyDir, keyFile)
	rep, err := seal.Restore(context.Background(), keys, run.Traces, nil)
	require.NoError(t, err)
	require.Positive(t, rep.Restored)
	var opened string
	rss := run.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				opened += fmt.Sprint(sss.At(j).Spans().At(k).Attributes().AsRaw())
			}
		}
	}
	assert.Contains(t, opened, pii, "the sealed originals give the PII back")
	for _, v := range credentials {
		assert.NotContains(t, opened, v, "a credential was sealed")
	}
}

// TestSealKeyInDataDirRefused: a collector whose seal master key file would lie inside its data
// directory (RUNAGAIN_SEAL_KEY_DIR=<data dir>/keys and no key elsewhere, the layout the README
// once showed) refuses to start, naming both paths.
func TestSealKeyInDataDirRefused(t *testing.T) {
	dataDir := t.TempDir()
	keyDir := filepath.Join(dataDir, "keys")
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "otelcol-runagain"), "--config", filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	cmd.Env = append(os.Environ(),
		"RUNAGAIN_DATA_DIR="+dataDir, "RUNAGAIN_SEAL_KEY_DIR="+keyDir, seal.DefaultKeyEnv+"=", seal.DefaultKeyFileEnv+"=",
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
		require.Error(t, err)
		t.Logf("collector with its seal key in the data directory: %s", lastLine(string(out)))
		assert.Contains(t, string(out), "the master key file "+filepath.Join(keyDir, "master.key")+" is inside the data directory "+dataDir)
		_, statErr := os.Stat(filepath.Join(keyDir, "master.key"))
		assert.True(t, os.IsNotExist(statErr), "the refused key file was created")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the collector started with its seal key inside the data directory")
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
