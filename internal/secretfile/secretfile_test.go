// SPDX-License-Identifier: Apache-2.0

package secretfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckPrivate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	require.NoError(t, CheckPrivate(p))
	for _, m := range []os.FileMode{0o640, 0o604, 0o644, 0o660} {
		require.NoError(t, os.Chmod(p, m))
		err := CheckPrivate(p)
		require.Error(t, err, "mode %04o", m)
		assert.Contains(t, err.Error(), "chmod 600 "+p)
	}
	assert.ErrorIs(t, CheckPrivate(p+"-missing"), os.ErrNotExist)
}
