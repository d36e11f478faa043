// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/proxy"
)

// EnvBroker names the broker's Unix socket in the environment of the agent that `proxy --record`,
// `replay`, `rerun` and `test` run. A Unix socket (a path, not a port) reaches the broker from a
// network namespace of its own as well.
const EnvBroker = "RUNAGAIN_MCP_BROKER"

// Modes a broker runs in.
const (
	ModeRecord = "record" // start the server, pass everything through, record
	ModeReplay = "replay" // answer from the recording; the server only for what goes live
)

// Actions of a broker's Decision.
const (
	ActionServe  = "serve"  // Response (and Before) from the recording
	ActionLive   = "live"   // send the request to the real server
	ActionRefuse = "refuse" // answer with Response, a JSON-RPC error
)

// Decision is the broker's answer to one request of the agent.
type Decision struct {
	Action   string   `json:"action"`
	Response string   `json:"response,omitempty"` // serve: the recorded response; refuse: the error response
	Before   []string `json:"before,omitempty"`   // serve: the server's messages recorded before the response
	Span     string   `json:"span,omitempty"`     // serve: the recorded exchange's span id
	Error    string   `json:"error,omitempty"`
}

// Client talks to a broker over its Unix socket.
type Client struct {
	hc *http.Client
}

// Dial returns a client of the broker whose socket is at path.
func Dial(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

func (c *Client) post(ctx context.Context, path, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://broker"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("broker %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// Mode asks how the broker wants server name handled (ModeRecord or ModeReplay).
func (c *Client) Mode(ctx context.Context, name string) (string, error) {
	var r struct {
		Mode string `json:"mode"`
	}
	b, _ := json.Marshal(map[string]string{"server": name})
	var err error
	for try := 0; try < 3; try++ { // a loaded machine may be slow to accept
		if err = c.post(ctx, "/session", "application/json", b, &r); err == nil {
			return r.Mode, nil
		}
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
	return "", fmt.Errorf("runagain mcp %s: asking the runagain command it runs under (%s): %w", name, EnvBroker, err)
}

// Call asks what to do with one request (raw JSON-RPC message) to server name.
func (c *Client) Call(ctx context.Context, name string, raw []byte) (*Decision, error) {
	b, _ := json.Marshal(map[string]string{"server": name, "message": string(raw)})
	var d Decision
	if err := c.post(ctx, "/call", "application/json", b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// ConsumeTraces hands exchange spans to the broker, which records them in the run.
func (c *Client) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		return err
	}
	return c.post(ctx, "/spans", "application/x-protobuf", b, nil)
}

// Lookup finds a variable of the environment runagain gave the agent: in this process's
// environment, else in the nearest ancestor process's (/proc/PID/environ, Linux): MCP clients
// start servers with a reduced environment (the TypeScript SDK passes only HOME, LOGNAME, PATH,
// SHELL, TERM and USER by default), so RUNAGAIN_MCP_BROKER and TRACEPARENT are often missing
// here while the agent that started the server has them. from names where it was found.
func Lookup(key string) (value, from string) {
	if v := os.Getenv(key); v != "" {
		return v, "environment"
	}
	pid := os.Getppid()
	for i := 0; i < 32 && pid > 1; i++ {
		if v, ok := procEnv(pid, key); ok {
			return v, "environment of process " + strconv.Itoa(pid)
		}
		pid = parentPID(pid)
	}
	return "", ""
}

func procEnv(pid int, key string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return "", false
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok && k == key && v != "" {
			return v, true
		}
	}
	return "", false
}

// parentPID reads the parent of pid from /proc/PID/stat (field 4, after the command in parens).
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// replaceID rewrites a recorded response's id to the live request's (proxy.ReplaceRPCID).
func replaceID(b []byte, from, to string) ([]byte, bool) { return proxy.ReplaceRPCID(b, from, to) }
