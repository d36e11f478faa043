// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestTimeRange: --since and --until bound a listing by run start; a reversed range is an
// error naming both flags, before any store is opened.
func TestTimeRange(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	from, to, err := timeRange("7d", "2h", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-7*24*time.Hour), from)
	assert.Equal(t, now.Add(-2*time.Hour), to)
	_, _, err = timeRange("2h", "7d", now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--since "2h" is not before --until "7d"`)
	for _, args := range [][]string{{"sessions", "--since", "1h", "--until", "1d"}, {"patterns", "--since", "1h", "--until", "1d"}} {
		_, _, err := runCLI(t, append(args, "--data-dir", t.TempDir())...)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "is not before --until", "%v", args)
	}
}

// TestShowLinks: the human form of show prints a span's links (they were only in --json).
func TestShowLinks(t *testing.T) {
	var b strings.Builder
	printShow(&b, &ShowRun{Spans: []ShowSpan{{Name: "step", Links: []ShowLink{
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", Attributes: map[string]any{"link.reason": "retry of"}},
	}}}})
	assert.Contains(t, b.String(), "link trace 0af7651916cd43dd8448eb211c80319c span b7ad6b7169203331")
	assert.Contains(t, b.String(), "link.reason: retry of")
}
