// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCAKeyPrivate: the CA key is created mode 0600, and a key readable by others is refused.
func TestCAKeyPrivate(t *testing.T) {
	dir := t.TempDir()
	_, _, err := LoadOrCreateCA(dir)
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, CAKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	_, _, err = LoadOrCreateCA(dir)
	require.NoError(t, err, "loads again")
	require.NoError(t, os.Chmod(filepath.Join(dir, CAKeyFile), 0o644))
	_, _, err = LoadOrCreateCA(dir)
	assert.ErrorContains(t, err, "proxy-ca-key.pem is accessible by group or others (mode 0644)")
}
