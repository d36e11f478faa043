// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// plainAgentEnv switches the test binary into TestHelperPlainHTTPAgent.
const plainAgentEnv = "RUNAGAIN_E2E_PLAIN_HTTP_AGENT"

// plainAgentRequest is the chat completions request the stuck agent sends, byte for byte, every turn.
const plainAgentRequest = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a weather bot."},{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`

// TestHelperPlainHTTPAgent is not a test: run as a child process (plainAgentEnv=1) it is an agent
// with no SDK and no tracing, stuck in a loop: five times it asks the model (plain HTTP to
// OPENAI_BASE_URL) and calls the tool it is told to call over MCP streamable HTTP
// (RUNAGAIN_PROXY + /mcp/mcp), JSON-RPC ids counting from MCP_ID_BASE. It fails when a tool
// result does not answer its request's id.
func TestHelperPlainHTTPAgent(t *testing.T) {
	if os.Getenv(plainAgentEnv) != "1" {
		t.Skip("helper process")
	}
	base, _ := strconv.Atoi(os.Getenv("MCP_ID_BASE"))
	for i := 0; i < 5; i++ {
		resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json", strings.NewReader(plainAgentRequest))
		if err != nil {
			t.Fatal(err)
		}
		var cc struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&cc)
		resp.Body.Close()
		if err != nil || len(cc.Choices) == 0 || len(cc.Choices[0].Message.ToolCalls) == 0 {
			t.Fatalf("chat completion: %v %+v", err, cc)
		}
		fn := cc.Choices[0].Message.ToolCalls[0].Function
		id := base + i
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, fn.Name, fn.Arguments)
		req, _ := http.NewRequest("POST", os.Getenv("RUNAGAIN_PROXY")+"/mcp/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", "sess-e2e")
		mr, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(mr.Body)
		answered := false
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(line), &msg) == nil && msg.Result != nil {
				if msg.ID == nil || *msg.ID != id {
					t.Fatalf("tool result answers id %v, want %d", msg.ID, id)
				}
				answered = true
			}
		}
		mr.Body.Close()
		if !answered {
			t.Fatalf("no tool result for id %d", id)
		}
	}
	fmt.Println("agent done")
}

// scriptedModelAndMCP starts the upstreams of the plain agent on 127.0.0.1: a chat completions
// API that always asks for get_weather (usage with cached tokens), and an MCP server answering
// tools/call over SSE with the request's id.
func scriptedModelAndMCP(t *testing.T) (model, mcp *httptest.Server, calls *atomic.Int64) {
	calls = &atomic.Int64{}
	model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-loop","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}}],"usage":{"prompt_tokens":52,"completion_tokens":17,"prompt_tokens_details":{"cached_tokens":32}}}`)
	}))
	t.Cleanup(model.Close)
	mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"rainy, 57°F\"}],\"isError\":false}}\n\n", req.ID)
	}))
	t.Cleanup(mcp.Close)
	return model, mcp, calls
}

var proxyTraceRE = regexp.MustCompile(`run trace ([0-9a-f]{32})`)

// promValue returns the sum of the samples of metric whose labels contain every one of labels.
func promValue(t *testing.T, port int, metric string, labels ...string) (float64, string) {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, metric+"{") && !strings.HasPrefix(l, metric+" ") {
			continue
		}
		ok := true
		for _, lb := range labels {
			ok = ok && strings.Contains(l, lb)
		}
		if !ok {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v := f[1]
		if i := strings.Index(l, "} "); i >= 0 {
			v = strings.Fields(l[i+2:])[0]
		}
		x, err := strconv.ParseFloat(v, 64)
		if err == nil {
			sum += x
		}
	}
	return sum, string(b)
}

// TestNoSDKAgentThroughProxy: an agent with no SDK and no tracing, recorded only through
// `runagain proxy --record`, is understood as LLM and tool calls: sessions gives its model and
// tokens, `show --step 1` its exact messages (derived from the recorded exchange), agent_guard
// prices it (by hand from the genai-prices table: gpt-4o-mini $0.15/M input, $0.075/M cached
// input, $0.60/M output) and raises loop alerts for the repeated LLM request and tool call; the
// run replays with different JSON-RPC ids.
func TestNoSDKAgentThroughProxy(t *testing.T) {
	promPort := collectortest.FreePort(t)
	col := collectortest.Start(t, collectortest.Options{Env: []string{"RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:" + itoa(promPort)}})
	model, mcp, calls := scriptedModelAndMCP(t)
	agent := []string{"--", os.Args[0], "-test.run=^TestHelperPlainHTTPAgent$", "-test.count=1"}
	env := []string{plainAgentEnv + "=1", "MCP_ID_BASE=1"}
	out, errOut, err := cliEnv(t, col, env, append([]string{"proxy", "--record", "--endpoint", col.GRPC, "--listen", "127.0.0.1:0",
		"--route", "openai=" + model.URL, "--route", "mcp=" + mcp.URL}, agent...)...)
	require.NoError(t, err, "%s\n%s", out, errOut)
	require.Contains(t, out, "agent done")
	require.Equal(t, int64(5), calls.Load())
	m := proxyTraceRE.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	trace := m[1]
	waitShow(t, col, trace, 11, 0) // the proxy's root span, 5 chat exchanges, 5 MCP exchanges

	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, []string{"gpt-4o-mini-2024-07-18"}, rows[0].Models)
	assert.Equal(t, int64(5*52), rows[0].InputTokens)
	assert.Equal(t, int64(5*17), rows[0].OutputTokens)
	// gpt-4o-mini: $0.15/M input, $0.075/M cached input, $0.60/M output (genai-prices).
	assert.InDelta(t, 5*(20*0.15+32*0.075+17*0.60)/1e6, rows[0].CostUSD, 1e-12, "sessions cost")

	step := cli(t, col, "show", trace, "--step", "1")
	assert.Contains(t, step, `step 1 of 5: POST (span `)
	assert.Contains(t, step, `model gpt-4o-mini-2024-07-18)
(GenAI attributes derived by runagain from the recorded HTTP exchange: runagain.genai.derived)

=== tool definitions
[
  {
    "function": {
      "name": "get_weather",
      "parameters": {
        "properties": {
          "location": {
            "type": "string"
          }
        },
        "type": "object"
      }
    },
    "type": "function"
  }
]

=== input: 2 messages, recorded attributes gen_ai.input.messages / gen_ai.output.messages

--- system
You are a weather bot.

--- user
Weather in Paris?

=== output: 1 message, recorded attributes gen_ai.input.messages / gen_ai.output.messages

--- assistant (finish_reason tool_calls)
[tool_call get_weather id=call_1]
{"location":"Paris"}
`)
	show := cli(t, col, "show", trace)
	assert.Equal(t, 5, strings.Count(show, "▸ [tool] POST"), "each MCP tools/call is a tool call:\n%s", show)
	assert.Contains(t, show, `gen_ai.tool.call.result: {"content":[{"text":"rainy, 57°F","type":"text"}],"isError":false}`)
	assert.Contains(t, show, "mcp.session.id: sess-e2e")

	// agent_guard: cost of 5 calls, each 20 uncached + 32 cached input tokens and 17 output tokens.
	wantCost := 5 * (20*0.15 + 32*0.075 + 17*0.60) / 1e6
	var cost float64
	var metrics string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cost, metrics = promValue(t, promPort, "runagain_cost_USD_total")
		loops, _ := promValue(t, promPort, "runagain_alerts_total", `alert_kind="loop"`)
		if cost > 0 && loops >= 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.InDelta(t, wantCost, cost, 1e-12, "runagain_cost_USD_total:\n%s", metrics)
	loops, _ := promValue(t, promPort, "runagain_alerts_total", `alert_kind="loop"`)
	assert.Equal(t, 2.0, loops, "one loop alert for the repeated LLM request, one for the repeated tool call:\n%s", metrics)
	assert.False(t, math.IsNaN(cost))

	// Replay: nothing reaches the upstreams; the MCP client's new ids are answered.
	model.Close()
	mcp.Close()
	out, errOut, err = cliEnv(t, col, []string{plainAgentEnv + "=1", "MCP_ID_BASE=100"}, append([]string{"replay", trace, "--route", "mcp=" + mcp.URL}, agent...)...)
	require.NoError(t, err, "%s\n%s", out, errOut)
	assert.Contains(t, out, "agent done")
}

// cliEnv runs bin/runagain with the collector's environment plus env.
func cliEnv(t *testing.T, col *collectortest.Collector, env []string, args ...string) (string, string, error) {
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), args...)
	cmd.Env = append(append(append([]string{}, col.Env...), "RUNAGAIN_ENDPOINT="+col.GRPC), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), err
}
