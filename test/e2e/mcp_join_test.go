// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestMCPJoinsAnInstrumentedAgent: the notes agent (the official openai and MCP TypeScript
// clients, test/clients/mcp-node) traced by @opentelemetry/sdk-node, whose SDK ignores
// TRACEPARENT, with its MCP server started as `runagain mcp`. Under `proxy --record` it gives
// ONE run: the three chat exchanges and the five MCP exchanges are placed in the agent's own
// trace, each tools/call under the agent's execute_tool span of that tool with a link marked
// inferred, the rest under the proxy's root, which sits under the agent's root. Nothing is left
// in the proxy's trace. Replayed with the server's script gone, the same run serves both kinds
// and is one run again.
func TestMCPJoinsAnInstrumentedAgent(t *testing.T) {
	node, mcpModules := mcpNodeModules(t)
	_, otelModules := nodeModules(t)
	model, llmCalls := notesModel(t)
	col := collectortest.Start(t, collectortest.Options{})
	script, notes := notesServer(t, mcpModules)
	bin := filepath.Join(collectortest.BinDir(t), "runagain")
	agent := filepath.Join(collectortest.RepoRoot(t), "test", "clients", "mcp-node", "agent.js")
	env := []string{"NODE_PATH=" + otelModules + ":" + mcpModules, "RUNAGAIN_BIN=" + bin, "MCP_SERVER_SCRIPT=" + script, "NOTES_FILE=" + notes,
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.HTTP, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}

	out, errOut, code := dsCLI(t, col, env, "proxy", "--record", "--route", "openai="+model.URL, "--", node, agent)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	t.Logf("proxy --record stderr:\n%s", errOut)
	require.Equal(t, int64(3), llmCalls.Load())
	m := regexp.MustCompile(`(?m)^trace ([0-9a-f]{32})$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the agent prints its trace id: %s", out)
	agentTrace := m[1]
	assert.Contains(t, errOut, "run trace "+agentTrace, "the run is the agent's own trace")
	assert.Contains(t, errOut, "joined the agent's trace "+agentTrace+" (by resource): 5 exchanges placed under the calls they belong to")
	assert.Contains(t, errOut, ", 3 under the proxy's root", "initialize, notifications/initialized and tools/list belong to no call")

	// agent: invoke_agent, 3 chat spans, 2 execute_tool; 3 HTTP + 5 MCP exchanges; the proxy's root.
	run := waitRunSpans(t, col.DataDir, agentTrace, 6+8+1)
	byID := map[string]ptrace.Span{}
	for _, sp := range spansOf(run.Traces) {
		byID[sp.SpanID().String()] = sp
	}
	var agentRoot, proxyRoot string
	for _, sp := range spansOf(run.Traces) {
		switch {
		case sp.ParentSpanID().IsEmpty():
			agentRoot = sp.SpanID().String()
		case strings.HasPrefix(sp.Name(), "runagain record"):
			proxyRoot = sp.SpanID().String()
		}
	}
	require.NotEmpty(t, proxyRoot)
	assert.Equal(t, agentRoot, byID[proxyRoot].ParentSpanID().String(), "the proxy's root is under the agent's")
	assert.GreaterOrEqual(t, byID[proxyRoot].StartTimestamp(), byID[agentRoot].StartTimestamp(), "the proxy's root starts within the agent's")
	assert.LessOrEqual(t, byID[proxyRoot].EndTimestamp(), byID[agentRoot].EndTimestamp(), "the proxy's root ends within the agent's")
	toolCalls := 0
	for _, sp := range spansOf(run.Traces) {
		method, ok := sp.Attributes().Get("mcp.method.name")
		if !ok {
			continue
		}
		parent := byID[sp.ParentSpanID().String()]
		if method.Str() != "tools/call" {
			assert.Equal(t, proxyRoot, sp.ParentSpanID().String(), "%s is under the proxy's root", sp.Name())
			continue
		}
		toolCalls++
		tool, _ := sp.Attributes().Get("gen_ai.tool.name")
		assert.Equal(t, "execute_tool "+tool.Str(), parent.Name(), "%s is under the agent's span of its tool", sp.Name())
		require.Equal(t, 1, sp.Links().Len(), sp.Name())
		typ, _ := sp.Links().At(0).Attributes().Get(runagainattr.LinkType)
		assert.Equal(t, runagainattr.LinkInferred, typ.Str())
	}
	assert.Equal(t, 2, toolCalls)

	// One execution, one run, complete; each LLM call counted once: 150/29 tokens.
	type row struct {
		TraceID      string `json:"trace_id"`
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
		Orphans      int64  `json:"orphans"`
	}
	sessions := func() []row {
		var rows []row
		require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
		return rows
	}
	rows := sessions()
	require.Len(t, rows, 1, "one execution, one run: %+v", rows)
	assert.Equal(t, row{TraceID: agentTrace, InputTokens: 150, OutputTokens: 29}, rows[0])
	shown := cli(t, col, "show", agentTrace)
	t.Logf("show:\n%s", shown)
	assert.Contains(t, shown, "exchanges: 3 HTTP, 5 MCP (servers: notes): 8 recorded, 0 served")

	// Replay with the server's script gone: served from the joined run, one run again.
	require.NoError(t, os.Remove(script))
	out, errOut, code = dsCLI(t, col, env, "replay", agentTrace, "--", node, agent)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	t.Logf("replay stderr:\n%s", errOut)
	assert.Equal(t, int64(3), llmCalls.Load(), "replay reached the model")
	assert.Contains(t, out, "answer: The notes say: start; buy milk")
	m = regexp.MustCompile(`(?m)^trace ([0-9a-f]{32})$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Contains(t, errOut, "runagain replay: joined the agent's trace "+m[1])
	assert.Len(t, sessions(), 2, "record and replay: two executions, two runs")
}
