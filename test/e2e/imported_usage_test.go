// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestLangfuseImportedUsage imports a LangGraph run exported by Langfuse whose observations carry
// no OpenTelemetry attributes (usage only in Langfuse's usageDetails): `runagain sessions` shows
// its model and tokens instead of "-" and 0/0.
func TestLangfuseImportedUsage(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	file := filepath.Join(corpus.Dir(t), "langfuse/packages/shared/scripts/seeder/utils/framework-traces/langgraph-2025-08-22.json")
	cli(t, c, "import", "--endpoint", c.GRPC, file)
	waitForSpans(t, c, 9)
	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, "e1fde3efec57ce8a69bafd3fb928a7eb", rows[0].TraceID)
	assert.Equal(t, []string{"gpt-4o-2024-08-06"}, rows[0].Models)
	// Two generations: usageDetails {input 60, output 15} and {input 108, output 51}.
	assert.Equal(t, int64(60+108), rows[0].InputTokens)
	assert.Equal(t, int64(15+51), rows[0].OutputTokens)
}
