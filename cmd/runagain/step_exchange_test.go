// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/runtest"
)

// TestShowStepPrintsItsExchange: `show --step N` prints the HTTP exchange the LLM call made
// (request and response with headers, the streamed answer as its SSE events one by one), and
// --json carries it as http_exchanges.
func TestShowStepPrintsItsExchange(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	trace := pcommon.TraceID{0xab, 0xcd, 0xef, 0x12, 15: 7}
	_, err = db.WriteTraces(context.Background(), runtest.StreamedRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	saved := dataDirFlag
	t.Cleanup(func() { dataDirFlag = saved })

	out, _, err := runCLI(t, "--data-dir", dir, "show", trace.String(), "--step", "1")
	require.NoError(t, err)
	assert.Contains(t, out, "=== HTTP exchange 1 of 1 (span "+pcommon.SpanID{7, runtest.LLMExchange}.String()+", recorded by proxy)\n"+
		"POST https://api.openai.com/v1/chat/completions -> 200 OK in 950ms\n--- request\n")
	assert.Contains(t, out, "authorization: [REDACTED]\ncontent-type: application/json\n\n{\"model\":\"gpt-4o-mini\",\"stream\":true,")
	assert.Contains(t, out, "--- response\ncontent-type: text/event-stream\nx-request-id: req_42\n\n3 server-sent events:\n[1] +250ms, ")
	for k, e := range runtest.SSEEvents {
		assert.Contains(t, out, e, "event %d printed whole", k)
	}
	assert.Contains(t, out, "[3] +850ms, 14 bytes\ndata: [DONE]\n")

	js, _, err := runCLI(t, "--data-dir", dir, "show", trace.String(), "--step", "1", "--json")
	require.NoError(t, err)
	var in struct {
		Exchanges []runview.HTTPExchange `json:"http_exchanges"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &in))
	require.Len(t, in.Exchanges, 1)
	require.Len(t, in.Exchanges[0].Events, 3)
	assert.Equal(t, runtest.SSEEvents[1], in.Exchanges[0].Events[1].Data)
}

// TestShowToolPrintsItsMCPExchange: `show --tool N` prints the tool call's arguments and result
// and the MCP tools/call it made: method and tool, arguments, the content items one by one,
// isError, and the exact JSON-RPC lines; the call recorded beside its tool span is that span's.
// --json carries them as mcp_exchanges.
func TestShowToolPrintsItsMCPExchange(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	trace := pcommon.TraceID{0xab, 0xcd, 0xef, 0x13, 15: 8}
	_, err = db.WriteTraces(context.Background(), runtest.MCPRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	saved := dataDirFlag
	t.Cleanup(func() { dataDirFlag = saved })
	// The command's flags outlive one Execute: start and end with --step, --tool and --json unset.
	show, _, err := rootCmd.Find([]string{"show"})
	require.NoError(t, err)
	unset := func() {
		for f, zero := range map[string]string{"step": "0", "tool": "0", "json": "false"} {
			require.NoError(t, show.Flags().Set(f, zero))
			show.Flags().Lookup(f).Changed = false
		}
	}
	unset()
	t.Cleanup(unset)

	out, _, err := runCLI(t, "--data-dir", dir, "show", trace.String(), "--tool", "1")
	require.NoError(t, err)
	assert.Contains(t, out, "tool call 1 of 2: append_note (span "+pcommon.SpanID{8, runtest.MCPToolSpan}.String()+")\n")
	assert.Contains(t, out, "=== MCP exchange 1 of 1 (span "+pcommon.SpanID{8, runtest.MCPToolCall}.String()+", server notes)\n"+
		"tools/call append_note -> ok in 360ms\n--- request\nid: 7\n"+
		`arguments: {"title":"Paris","text":"sunny, 21 °C","tags":["weather","fr"]}`+"\nas recorded: "+runtest.MCPAppendRequest+"\n"+
		"--- response\n[1] text\nappended note 3 (Paris)\nas recorded: "+runtest.MCPAppendResponse+"\n")

	out, _, err = runCLI(t, "--data-dir", dir, "show", trace.String(), "--tool", "2")
	require.NoError(t, err)
	assert.Contains(t, out, "tools/call read_note -> isError: true in 460ms\n", "the call recorded beside its tool span")
	assert.Contains(t, out, "[1] text\nno note titled Lyon\n")

	_, _, err = runCLI(t, "--data-dir", dir, "show", trace.String(), "--tool", "3")
	require.ErrorContains(t, err, "has tool steps 1..2")

	js, _, err := runCLI(t, "--data-dir", dir, "show", trace.String(), "--tool", "2", "--json")
	require.NoError(t, err)
	var in struct {
		MCP []runview.MCPExchange `json:"mcp_exchanges"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &in))
	require.Len(t, in.MCP, 1)
	assert.True(t, in.MCP[0].IsError)
	assert.Equal(t, runtest.MCPReadRequest, in.MCP[0].Request)
}
