// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestShowUsageNotRecorded: an LLM call with no gen_ai.usage attribute is shown as "usage not
// recorded", not as a call that used 0 tokens; one that recorded 0 tokens says so.
func TestShowUsageNotRecorded(t *testing.T) {
	var b strings.Builder
	printShow(&b, &ShowRun{Spans: []ShowSpan{
		{Name: "chat a", GenAIKind: "llm", Model: "gpt-4o", Attributes: map[string]any{"gen_ai.request.model": "gpt-4o"}},
		{Name: "chat b", GenAIKind: "llm", Model: "gpt-4o", Attributes: map[string]any{"gen_ai.usage.input_tokens": int64(0)}},
	}})
	out := b.String()
	assert.Contains(t, out, "model gpt-4o  usage not recorded")
	assert.Contains(t, out, "model gpt-4o  tokens in 0 out 0")
}
