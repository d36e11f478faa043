// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// mcpNodeModules returns the node_modules .ci/run installs test/clients/mcp-node's packages into
// (RUNAGAIN_MCP_NODE_MODULES, else ~/.cache/runagain-mcp-node/node_modules); skipped when missing,
// failed under RUNAGAIN_REQUIRE_NODE_CLIENTS=1.
func mcpNodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	return nodePackages(t, "RUNAGAIN_MCP_NODE_MODULES", "runagain-mcp-node", "openai", "@modelcontextprotocol/sdk", "zod")
}

// notesModel is a scripted chat completions upstream: no tool result yet asks for append_note
// {"text":"buy milk"}, one asks for read_notes, two answer with what read_notes returned.
func notesModel(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, fmt.Sprint(m.Content))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		call := func(name, args string) {
			fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1764460800,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":%q,"arguments":%q}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":10,"total_tokens":50}}`, n.Load(), len(results)+1, name, args)
		}
		switch len(results) {
		case 0:
			call("append_note", `{"text":"buy milk"}`)
		case 1:
			call("read_notes", `{}`)
		default:
			answer, _ := json.Marshal("The notes say: " + strings.ReplaceAll(strings.TrimSpace(results[1]), "\n", "; "))
			fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1764460800,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":70,"completion_tokens":9,"total_tokens":79}}`, n.Load(), answer)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// notesServer copies the notes MCP server (test/clients/mcp-node/server.js) into a directory of
// its own (its script can then be removed), finding its packages through a node_modules link
// beside it: the MCP client starts it with a reduced environment (no NODE_PATH). notes is its
// notes file, holding "start".
func notesServer(t *testing.T, modules string) (script, notes string) {
	t.Helper()
	dir := t.TempDir()
	srvDir := filepath.Join(dir, "server")
	require.NoError(t, os.MkdirAll(srvDir, 0o755))
	require.NoError(t, os.Symlink(modules, filepath.Join(srvDir, "node_modules")))
	script = filepath.Join(srvDir, "server.js")
	src, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "test", "clients", "mcp-node", "server.js"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, src, 0o644))
	notes = filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("start\n"), 0o644))
	return script, notes
}

// TestMCPStdioRecordReplay records an agent built with the official openai and MCP TypeScript
// clients whose notes server (the official MCP SDK over stdio) is started as `runagain mcp`, then
// replays it with the server's script gone, changes a tool argument, reruns with another model,
// freezes the run into a dataset and tests it, and checks the side-effect firewall for HTTP and MCP.
func TestMCPStdioRecordReplay(t *testing.T) {
	node, modules := mcpNodeModules(t)
	model, llmCalls := notesModel(t)
	var tickets atomic.Int64
	ticketAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tickets.Add(1)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"T-1"}`)
	}))
	defer ticketAPI.Close()
	col := collectortest.Start(t, collectortest.Options{})
	repo := collectortest.RepoRoot(t)
	bin := filepath.Join(collectortest.BinDir(t), "runagain")

	script, notes := notesServer(t, modules)
	src, err := os.ReadFile(script)
	require.NoError(t, err)

	agent := []string{"--", node, filepath.Join(repo, "test", "clients", "mcp-node", "agent.js")}
	env := []string{"NODE_PATH=" + modules, "RUNAGAIN_BIN=" + bin, "MCP_SERVER_SCRIPT=" + script, "NOTES_FILE=" + notes}
	route := []string{"--route", "openai=" + model.URL}
	run := func(extra []string, args ...string) (string, string, int) {
		t.Helper()
		return dsCLI(t, col, append(append([]string{}, env...), extra...), args...)
	}
	cmdline := func(verb string, flags ...string) []string {
		return append(append(append([]string{}, verb), flags...), agent...)
	}

	// Record.
	out, errOut, code := run(nil, cmdline("proxy", append([]string{"--record"}, route...)...)...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	wantOut := "tool append_note: \"appended 9 bytes\"\ntool read_notes: \"start\\nbuy milk\\n\"\nanswer: The notes say: start; buy milk\n"
	require.Equal(t, wantOut, out, errOut)
	assert.Contains(t, errOut, "and 5 MCP exchanges (servers: notes)", "initialize, notifications/initialized, tools/list, two tools/call")
	m := regexp.MustCompile(`run trace ([0-9a-f]{32})`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	trace := m[1]
	recorded := waitRunSpans(t, col.DataDir, trace, 1+3+5)
	require.Equal(t, int64(3), llmCalls.Load())
	afterRecord, err := os.ReadFile(notes)
	require.NoError(t, err)
	require.Equal(t, "start\nbuy milk\n", string(afterRecord))

	// The exchanges are spans of the run's trace under its root, with the MCP conventions.
	var rootID string
	methods := map[string]ptrace.Span{}
	for _, sp := range spansOf(recorded.Traces) {
		if sp.ParentSpanID().IsEmpty() {
			rootID = sp.SpanID().String()
		}
		if _, ok := sp.Attributes().Get("mcp.method.name"); ok {
			methods[sp.Name()] = sp
		}
	}
	require.Contains(t, methods, "tools/call append_note", "spans: %v", methods)
	call := methods["tools/call append_note"].Attributes().AsRaw()
	assert.Equal(t, rootID, methods["tools/call append_note"].ParentSpanID().String(), "TRACEPARENT places the exchange under the run's root")
	assert.Equal(t, "tools/call", call["mcp.method.name"])
	assert.Equal(t, "append_note", call["gen_ai.tool.name"])
	assert.Equal(t, "execute_tool", call["gen_ai.operation.name"])
	assert.JSONEq(t, `{"text":"buy milk"}`, call["gen_ai.tool.call.arguments"].(string))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"appended 9 bytes"}]}`, call["gen_ai.tool.call.result"].(string))
	assert.NotEmpty(t, call["mcp.session.id"])
	assert.NotEmpty(t, call["mcp.protocol.version"])
	assert.NotEmpty(t, call["jsonrpc.request.id"])
	assert.Contains(t, methods, "initialize")
	assert.Contains(t, methods, "tools/list")
	assert.Contains(t, methods, "notifications/initialized")

	stat := func() (string, time.Time) {
		b, err := os.ReadFile(notes)
		require.NoError(t, err)
		fi, err := os.Stat(notes)
		require.NoError(t, err)
		return string(b), fi.ModTime()
	}
	bytes0, mtime0 := stat()
	untouched := func(what string) {
		t.Helper()
		b, mt := stat()
		assert.Equal(t, bytes0, b, "%s: the notes file's bytes", what)
		assert.True(t, mt.Equal(mtime0), "%s: the notes file's mtime", what)
	}

	// Replay with the server's script gone: the agent finishes identically, nothing is written.
	require.NoError(t, os.Remove(script))
	out, errOut, code = run(nil, cmdline("replay", append([]string{trace}, route...)...)...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Equal(t, wantOut, out)
	assert.Contains(t, errOut, "MCP (notes): 4 served from the recording, 0 refused, 0 sent live")
	assert.Equal(t, int64(3), llmCalls.Load(), "replay reaches no upstream")
	untouched("replay")

	// A changed argument: the JSON-RPC error names the field, the command fails, the record is kept.
	out, errOut, code = run([]string{"NOTE_OVERRIDE=buy oats"}, cmdline("replay", append([]string{trace}, route...)...)...)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, `params.arguments.text: expected "buy milk", got "buy oats"`)
	assert.Contains(t, errOut, "agent failed: MCP error -32001", "the agent got the JSON-RPC error")
	untouched("diverged replay")
	// The record is on the replay's own run (pointing at the original's span); the original stays clean.
	rm := replayRunRE.FindStringSubmatch(errOut)
	require.NotNil(t, rm, errOut)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(cli(t, col, "show", rm[1]), "params.arguments.text") {
		if time.Now().After(deadline) {
			t.Fatalf("the divergence record is not listed with the replay run:\n%s", cli(t, col, "show", rm[1]))
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.NotContains(t, cli(t, col, "show", trace), "params.arguments.text", "the original run stays clean")

	// Rerun with another model: the LLM calls go live, the MCP calls are served.
	out, errOut, code = run(nil, cmdline("rerun", append([]string{trace, "--set", "model=gpt-4.1-mini"}, route...)...)...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Equal(t, wantOut, out)
	assert.Equal(t, int64(6), llmCalls.Load(), "three LLM calls live")
	assert.Contains(t, errOut, "MCP (notes): 4 served from the recording, 0 refused, 0 sent live")
	untouched("rerun")
	m = regexp.MustCompile(`new run ([0-9a-f]{32})`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	waitRunSpans(t, col.DataDir, m[1], 1+3+5)
	assert.Contains(t, cli(t, col, "show", m[1]), "exchanges: 3 HTTP, 5 MCP (servers: notes): 0 recorded, 5 served from the recording, 3 sent live, 0 refused")
	assert.Contains(t, cli(t, col, "show", trace), "exchanges: 3 HTTP, 5 MCP (servers: notes): 8 recorded, 0 served")

	// A dataset of the run: the test passes, then fails when the agent's tool arguments change.
	out, errOut, code = run(nil, "dataset", "add", "notes", trace, "--expect", "tools=recorded")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	exp := filepath.Join(t.TempDir(), "export")
	out, errOut, code = run(nil, "dataset", "export", "notes", exp)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	mcpFiles, _ := filepath.Glob(filepath.Join(exp, "cases", trace, "bodies", "*.mcp-request.json"))
	assert.Len(t, mcpFiles, 5, "dataset export writes the MCP messages")
	out, errOut, code = run(nil, append(append([]string{"test", "notes"}, route...), agent...)...)
	if code != 0 {
		if m := regexp.MustCompile(`runagain diff [0-9a-f]{32} ([0-9a-f]{32})`).FindStringSubmatch(out); m != nil {
			t.Logf("the test run:\n%s", cli(t, col, "show", m[1]))
		}
	}
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "PASS")
	out, errOut, code = run([]string{"NOTE_OVERRIDE=buy oats"}, append(append([]string{"test", "notes", "--json"}, route...), agent...)...)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, `"status": "fail"`)
	assert.Contains(t, out, `params.arguments.text: expected \"buy milk\", got \"buy oats\"`, "the divergence is among the failures")
	untouched("test")

	// The firewall: an unrecorded POST is refused, with --allow-host for its host too, and goes
	// live with --allow-live-writes.
	host := strings.TrimPrefix(ticketAPI.URL, "http://")
	post := []string{"EXTRA_POST_URL=" + ticketAPI.URL + "/tickets"}
	out, errOut, code = run(post, cmdline("replay", append([]string{trace}, route...)...)...)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "(POST "+ticketAPI.URL+"/tickets) matches no recorded request")
	out, errOut, code = run(post, cmdline("replay", append([]string{trace, "--allow-host", host}, route...)...)...)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "refused by the side-effect firewall: an unrecorded POST goes live only with --allow-live-writes "+host)
	assert.Equal(t, int64(0), tickets.Load())
	out, errOut, code = run(post, cmdline("replay", append([]string{trace, "--allow-host", host, "--allow-live-writes", host}, route...)...)...)
	assert.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Equal(t, int64(1), tickets.Load())
	assert.Contains(t, errOut, "0 refused, 1 sent live")

	// An unrecorded tools/call: refused with --allow-mcp, live with --allow-live-writes.
	out, errOut, code = run([]string{"NOTE_OVERRIDE=buy oats"}, cmdline("replay", append([]string{trace, "--allow-mcp", "notes"}, route...)...)...)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "refused by the side-effect firewall: an unrecorded tools/call goes live only with --allow-live-writes notes")
	untouched("refused tools/call")
	require.NoError(t, os.WriteFile(script, src, 0o644))
	out, errOut, code = run([]string{"NOTE_OVERRIDE=buy oats"}, cmdline("replay", append([]string{trace, "--allow-live-writes", "notes"}, route...)...)...)
	assert.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Contains(t, errOut, "MCP (notes): 3 served from the recording, 0 refused, 1 sent live")
	b, _ := stat()
	assert.Equal(t, "start\nbuy milk\nbuy oats\n", b, "the allowed live write happened once")

	// Diff sees the MCP tool like any tool: a rerun whose agent writes another note, sent live.
	out, errOut, code = run([]string{"NOTE_OVERRIDE=buy oats"}, cmdline("rerun", append([]string{trace, "--allow-live-writes", "notes"}, route...)...)...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	m = regexp.MustCompile(`new run ([0-9a-f]{32})`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	waitRunSpans(t, col.DataDir, m[1], 1+3+5)
	diff := cli(t, col, "diff", trace, m[1])
	assert.Regexp(t, `first difference: step \d+ \(tool append_note\): tool arguments differ at text`, diff)
	assert.Contains(t, diff, "- text: buy milk\n    + text: buy oats")
	assert.Regexp(t, `= step \d+/\d+  tool read_notes`, diff, "the read is the same in both")

	// Without a runagain command around the agent, runagain mcp sends its spans to the collector
	// itself (RUNAGAIN_ENDPOINT found in the agent's environment), as a run of its own.
	before := map[string]bool{}
	for _, r := range sessions(t, col) {
		before[r.TraceID] = true
	}
	direct := exec.Command(node, agent[2])
	direct.Env = append(append(os.Environ(), env...), "OPENAI_BASE_URL="+model.URL+"/v1", "RUNAGAIN_ENDPOINT="+col.GRPC, "NOTES_FILE="+filepath.Join(filepath.Dir(notes), "direct.txt"))
	dout, err := direct.CombinedOutput()
	require.NoError(t, err, "%s", dout)
	var own string
	for deadline := time.Now().Add(15 * time.Second); own == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, r := range sessions(t, col) {
			if !before[r.TraceID] && r.Spans == 6 {
				own = r.TraceID
			}
		}
	}
	require.NotEmpty(t, own, "a run with the session's 5 exchanges and its root span")
	assert.Contains(t, cli(t, col, "show", own), "runagain mcp notes")
}
