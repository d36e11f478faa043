// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadOrCreateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "redaction.key")
	k1, err := LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	assert.Len(t, k1, KeyFileBytes)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	k2, err := LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "the same file gives the same key")

	// The same key gives the same token in two redactors (collector restart, replay).
	r1, err := New(Config{HashKey: k1})
	require.NoError(t, err)
	r2, err := New(Config{HashKey: k2})
	require.NoError(t, err)
	a, _ := r1.Redact("mail jane.doe@example-corp.com")
	b, _ := r2.Redact("mail jane.doe@example-corp.com")
	assert.Equal(t, a, b)
	assert.NotContains(t, a, "jane.doe")

	bad := filepath.Join(t.TempDir(), "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not hex\n"), 0o600))
	_, err = LoadOrCreateKeyFile(bad)
	assert.ErrorContains(t, err, bad)
	short := filepath.Join(t.TempDir(), "short.key")
	require.NoError(t, os.WriteFile(short, []byte("ab\n"), 0o600))
	_, err = LoadOrCreateKeyFile(short)
	assert.ErrorContains(t, err, "at least 16 bytes")

	// a key readable by group or others is refused (the collector does not start)
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = LoadOrCreateKeyFile(path)
	assert.ErrorContains(t, err, "accessible by group or others (mode 0644)")
}

func TestLoadOrCreateKeyFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redaction.key")
	keys := make(chan []byte, 8)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			k, err := LoadOrCreateKeyFile(path)
			keys <- k
			errs <- err
		}()
	}
	var first []byte
	for i := 0; i < 8; i++ {
		require.NoError(t, <-errs)
		k := <-keys
		if first == nil {
			first = k
		}
		assert.Equal(t, first, k, "every process gets the one key")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}
