// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDatasetMissingDataDir: a dataset command on a data directory that does not exist fails
// naming it, and creates nothing (it used to create the directory and list an empty store).
func TestDatasetMissingDataDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	t.Setenv("RUNAGAIN_DATASETS_URL", "")
	_, _, err := runCLI(t, "dataset", "list", "--data-dir", missing, "--datasets-url", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing+" does not exist")
	_, statErr := os.Stat(missing)
	assert.True(t, os.IsNotExist(statErr), "the directory was created")
}
