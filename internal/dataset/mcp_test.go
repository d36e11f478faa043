// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/mcp"
)

// TestFreezeMCPExchange: a case keeps an MCP stdio exchange's messages as files under bodies/
// (exported byte for byte) and puts them back on the span when read.
func TestFreezeMCPExchange(t *testing.T) {
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID([16]byte{1})
	sp.SetSpanID([8]byte{2})
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"append_note","arguments":{"text":"buy milk"}}}`
	resp := `{"result":{"content":[{"type":"text","text":"ok"}]},"jsonrpc":"2.0","id":1}`
	(&mcp.Exchange{Server: "notes", Direction: "client", Request: []byte(req), Response: []byte(resp), Start: time.Unix(1, 0), End: time.Unix(2, 0)}).ToSpan(sp)

	c, err := Freeze("", sp.TraceID().String(), td, plog.NewLogs(), nil)
	require.NoError(t, err)
	assert.Equal(t, req, string(c.Files["bodies/0200000000000000.mcp-request.json"]))
	assert.Equal(t, resp, string(c.Files["bodies/0200000000000000.mcp-response.json"]))
	assert.Contains(t, string(c.Files[FileRun]), `"key": "runagain.mcp.request_file"`, "run.json names the file")
	assert.NotContains(t, string(c.Files[FileRun]), `"key": "runagain.mcp.request"`, "the message lives in its file, not in run.json")

	got := c.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	ex, ok := mcp.FromSpan(got)
	require.True(t, ok)
	assert.Equal(t, req, string(ex.Request))
	assert.Equal(t, resp, string(ex.Response))
}
