// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const httpGetHelperEnv = "RUNAGAIN_E2E_HTTP_GET"

// TestHelperHTTPGet is not a test: it is the agent's tool call that the sealing test runs under
// `runagain replay`. It GETs $RUNAGAIN_E2E_HTTP_GET through the proxy that replay sets in
// HTTP_PROXY and writes the response body to stdout, byte for byte.
func TestHelperHTTPGet(t *testing.T) {
	u := os.Getenv(httpGetHelperEnv)
	if u == "" {
		t.Skip("helper process for TestSealedOriginalsReplayExactly")
	}
	resp, err := http.Get(u)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	os.Exit(0)
}

// TestSealedOriginalsReplayExactly: the real binaries, config/default.yaml with sealing on
// (RUNAGAIN_SEAL_KEY_DIR). A WireMock cassette whose tool response holds an e-mail address and a
// phone number is imported; the data directory holds no clear copy of them and show shows the
// redacted form; replay serves the recorded response byte for byte. After runagain delete
// --session, the sealed copy cannot be opened and replay says the originals were erased.
func TestSealedOriginalsReplayExactly(t *testing.T) {
	dataDir := t.TempDir()
	keyDir := filepath.Join(dataDir, "keys")
	keyFile := filepath.Join(t.TempDir(), "seal.key") // the master key outside the data directory
	c := collectortest.Start(t, collectortest.Options{DataDir: dataDir, Env: []string{"RUNAGAIN_SEAL_KEY_DIR=" + keyDir, seal.DefaultKeyFileEnv + "=" + keyFile}})
	file, err := filepath.Abs("testdata/crm_contact_wiremock.json")
	require.NoError(t, err)
	res, err := importer.ParseFile(file)
	require.NoError(t, err)
	traceID := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	want := `{"id": 42, "name": "Ana Lima", "email": "ana@example.org", "phone": "+44 20 7946 0958", "note": "prefers e-mail"}`
	pii := []string{"ana@example.org", "+44 20 7946 0958"}

	cli(t, c, "import", "--endpoint", c.GRPC, file) // returns once the run is readable

	show := cli(t, c, "show", "--json", traceID)
	for _, v := range pii {
		assert.NotContains(t, show, v, "show must show the redacted form")
	}
	assert.Contains(t, show, seal.AttrSession)

	replay := func() (string, string) {
		cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), "replay", traceID, "--",
			os.Args[0], "-test.run=^TestHelperHTTPGet$", "-test.count=1")
		cmd.Env = append(append([]string(nil), c.Env...), "RUNAGAIN_ENDPOINT="+c.GRPC, httpGetHelperEnv+"=http://crm.internal.example/crm/contacts/42")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		require.NoError(t, cmd.Run(), "replay: %s", e.String())
		return o.String(), e.String()
	}
	got, errOut := replay()
	assert.Equal(t, want, got, "replay must serve the recorded bytes exactly\n%s", errOut)
	assert.Contains(t, errOut, "unsealed: serving the exact recorded bytes")

	// no clear copy anywhere in the data directory (SQLite, WAL, queue, blobs, decompressed too)
	c.Stop()
	control := "prefers e-mail" // kept by redaction, in the same response as the PII
	hits, files, _ := scanDir(t, dataDir, append([]string{control}, pii...))
	for _, v := range pii {
		assert.Empty(t, hits[v], "%q in clear in %v", v, hits[v])
	}
	assert.NotEmpty(t, hits[control], "the scan reads where the PII was sent: it would find it")
	assert.Greater(t, files, 2)
	c.StartAgain()

	out := cli(t, c, "delete", "--session", traceID, "--sealed-only")
	assert.Contains(t, out, "data key destroyed")

	// the sealed copy in the hot tier cannot be opened any more
	run, keys := hotRunAndKeys(t, dataDir, traceID, keyDir, keyFile)
	_, err = keys.DataKey(context.Background(), traceID, false)
	assert.True(t, errors.Is(err, seal.ErrErased), "data key still there: %v", err)
	rep, err := seal.Restore(context.Background(), keys, run.Traces, fixture.IsFixture)
	require.NoError(t, err)
	assert.Zero(t, rep.Restored)
	assert.Len(t, rep.Erased, 1)

	got, errOut = replay()
	t.Logf("replay after delete --session:\n%s%s", got, errOut)
	assert.Contains(t, errOut, "were erased")
	for _, v := range pii {
		assert.NotContains(t, got, v)
	}
	assert.True(t, strings.HasPrefix(got, `{"id": 42, "name": "Ana Lima", "email": "`), got)
}

// hotRunAndKeys reads run traceID from the hot tier of dataDir and opens the seal key directory
// keyDir with the master key in keyFile (closed at the end of the test).
func hotRunAndKeys(t *testing.T, dataDir, traceID, keyDir, keyFile string) (*store.Run, *seal.Keys) {
	t.Helper()
	db, err := sqlitestore.Open(filepath.Join(dataDir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	run, err := db.Run(context.Background(), traceID)
	db.Close()
	require.NoError(t, err)
	keys, err := seal.OpenKeysWith(context.Background(), keyDir, seal.Master{KeyFile: keyFile})
	require.NoError(t, err)
	t.Cleanup(func() { keys.Close() })
	return run, keys
}

// TestSealRotate: `runagain seal rotate` rewraps the session keys of a collector's sealed
// originals with a new master key file: afterwards replay serves the exact recorded bytes with
// the new key, the old key opens nothing (replay fails naming the session's data key), and the
// collector restarts on the new key, which opens the session's key. A new key file inside the data directory is
// refused naming both paths.
func TestSealRotate(t *testing.T) {
	dataDir := t.TempDir()
	keyDir := filepath.Join(dataDir, "keys")
	oldKey, newKey := filepath.Join(t.TempDir(), "seal.key"), filepath.Join(t.TempDir(), "seal-2.key")
	c := collectortest.Start(t, collectortest.Options{DataDir: dataDir, Env: []string{"RUNAGAIN_SEAL_KEY_DIR=" + keyDir, seal.DefaultKeyFileEnv + "=" + oldKey}})
	file, err := filepath.Abs("testdata/crm_contact_wiremock.json")
	require.NoError(t, err)
	res, err := importer.ParseFile(file)
	require.NoError(t, err)
	traceID := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	want := `{"id": 42, "name": "Ana Lima", "email": "ana@example.org", "phone": "+44 20 7946 0958", "note": "prefers e-mail"}`
	cli(t, c, "import", "--endpoint", c.GRPC, file)

	replay := func(keyFile string) (string, string, error) {
		cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), "replay", traceID, "--",
			os.Args[0], "-test.run=^TestHelperHTTPGet$", "-test.count=1")
		cmd.Env = append(append([]string(nil), c.Env...), "RUNAGAIN_ENDPOINT="+c.GRPC, seal.DefaultKeyFileEnv+"="+keyFile,
			httpGetHelperEnv+"=http://crm.internal.example/crm/contacts/42")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	got, errOut, err := replay(oldKey)
	require.NoError(t, err, errOut)
	require.Equal(t, want, got)

	c.Stop()
	inside := filepath.Join(dataDir, "next.key")
	_, errOut, err = cliEnv(t, c, nil, "seal", "rotate", "--data-dir", dataDir, "--key-dir", keyDir, "--new-key-file", inside)
	require.Error(t, err)
	assert.Contains(t, errOut, inside)
	assert.Contains(t, errOut, dataDir)
	out, errOut, err := cliEnv(t, c, nil, "seal", "rotate", "--data-dir", dataDir, "--key-dir", keyDir, "--new-key-file", newKey)
	require.NoError(t, err, errOut)
	assert.Contains(t, out, keyDir+": 1 of 1 session keys rewrapped with the new master key ("+newKey+")")
	assert.FileExists(t, newKey)

	_, errOut, err = replay(oldKey)
	assert.Error(t, err, "the old master key no longer opens the session key")
	assert.Contains(t, errOut, "unwrapping the data key of session")
	got, errOut, err = replay(newKey)
	require.NoError(t, err, errOut)
	assert.Equal(t, want, got, "replay serves the exact bytes with the new key\n%s", errOut)
	assert.Contains(t, errOut, "unsealed: serving the exact recorded bytes")

	// the collector on the new key
	c.Env = append(c.Env, seal.DefaultKeyFileEnv+"="+newKey)
	c.StartAgain()
	_, keys := hotRunAndKeys(t, dataDir, traceID, keyDir, newKey)
	_, err = keys.DataKey(context.Background(), traceID, false)
	assert.NoError(t, err)
}
