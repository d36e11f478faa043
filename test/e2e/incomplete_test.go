// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestIncompleteRunMarked: a run whose root span never arrived and whose spans name parents that
// are missing is marked incomplete in `sessions` (text and JSON, with why) and `show` hangs the
// orphans under a placeholder for each missing parent; when the missing spans arrive, the mark
// goes away.
func TestIncompleteRunMarked(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	part := newRun(7, "flushed-early")
	part.span(2, 1, "chat gpt-4o-mini", 100, 500, chatAttrs(10, 5, "stop"))
	part.span(3, 2, "retry", 150, 10, map[string]any{})
	part.span(4, 9, "execute_tool search", 700, 50, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"})
	sendOTLP(t, c, part.td, plog.NewLogs())
	waitShow(t, c, part.id(), 3, 0)

	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.True(t, rows[0].Incomplete)
	assert.Equal(t, "no root span; 2 orphan spans (parent not received)", rows[0].IncompleteReason)
	assert.Contains(t, cli(t, c, "sessions"), "no root span; 2 orphan spans (parent not received)")

	show := cli(t, c, "show", part.id())
	assert.Contains(t, show, "INCOMPLETE: no root span; 2 orphan spans (parent not received)")
	assert.Contains(t, show, "▸ [missing] parent span "+part.spanID(1)+" not received (1 orphan span(s) below arrived without it)\n  ▸ [llm] chat gpt-4o-mini")
	assert.Contains(t, show, "\n    ▸ [other] retry")
	assert.Contains(t, show, "▸ [missing] parent span "+part.spanID(9)+" not received (1 orphan span(s) below arrived without it)\n  ▸ [tool] execute_tool search")

	rest := newRun(7, "flushed-early")
	rest.span(1, 0, "invoke_agent", 0, 1000, map[string]any{"gen_ai.operation.name": "invoke_agent"})
	rest.span(9, 1, "plan", 600, 200, map[string]any{})
	sendOTLP(t, c, rest.td, plog.NewLogs())
	waitShow(t, c, part.id(), 5, 0)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
		if len(rows) == 1 && rows[0].Spans == 5 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Len(t, rows, 1)
	assert.False(t, rows[0].Incomplete, rows[0].IncompleteReason)
	assert.NotContains(t, cli(t, c, "sessions"), "INCOMPLETE")
	show = cli(t, c, "show", part.id())
	assert.NotContains(t, show, "INCOMPLETE")
	assert.NotContains(t, show, "[missing]")
	assert.Contains(t, show, "▸ [agent] invoke_agent")
}
