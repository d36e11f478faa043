// SPDX-License-Identifier: Apache-2.0

// Package agentrun runs an agent's command the way `runagain proxy --record`, replay, rerun and
// test do: its environment pointed at the proxy (Env), the broker its stdio MCP servers talk to
// (StartMCPBroker), and the command itself, inside the network sandbox or not (Run).
package agentrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/sandbox"
)

// Env points a command at the proxy listening on addr: the SDK base URLs at its routes
// (proxy.BaseURLEnv), HTTP_PROXY and RUNAGAIN_PROXY at it (and HTTPS_PROXY, NODE_EXTRA_CA_CERTS
// and RUNAGAIN_PROXY_CA when caPath, the --mitm CA file, is set), and TRACEPARENT (W3C Trace
// Context) when root names a root span.
func Env(addr, caPath string, root proxy.Root) []string {
	base := "http://" + addr
	env := []string{"HTTP_PROXY=" + base, "http_proxy=" + base, "RUNAGAIN_PROXY=" + base}
	for k, suffix := range proxy.BaseURLEnv {
		env = append(env, k+"="+base+suffix)
	}
	if caPath != "" {
		env = append(env, "HTTPS_PROXY="+base, "https_proxy="+base, "NODE_EXTRA_CA_CERTS="+caPath, "RUNAGAIN_PROXY_CA="+caPath)
	}
	if !root.TraceID.IsEmpty() {
		env = append(env, fmt.Sprintf("TRACEPARENT=00-%s-%s-01", root.TraceID, root.SpanID))
	}
	return env
}

// FlowServer serves a connection the sandbox captured (proxy.Recorder, proxy.Replayer).
type FlowServer interface {
	ServeFlow(c net.Conn, hostport string)
}

// Run runs args with env added to this process's environment, its stdin this process's, and
// returns its exit code (an error only when it could not be run). SIGTERM reaches it when ctx
// ends, and it gets 10 s to exit. Sandboxed, it runs in a network namespace of its own
// (internal/sandbox) whose connections h serves, those to this machine's loopback relayed as
// they are. started, when set, gets the command's pid once it runs.
func Run(ctx context.Context, sandboxed bool, h FlowServer, logger *log.Logger, args, env []string, stdout, stderr io.Writer, started func(int)) (int, error) {
	if !sandboxed {
		return runChild(ctx, args, env, stdout, stderr, started)
	}
	res, err := sandbox.Run(ctx, sandbox.Config{
		Args: args, Env: append(os.Environ(), env...), Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Logger: logger, Started: started,
		Flow: func(c net.Conn, dst netip.AddrPort, name string) {
			if dst.Addr().IsLoopback() {
				// This machine's own services (the proxy itself, the collector's OTLP ports, a local
				// tool server) stay reachable as they are outside the sandbox; nothing leaves the host.
				relayLoopback(c, dst, logger)
				return
			}
			host := dst.Addr().String()
			if name != "" {
				host = name
			}
			h.ServeFlow(c, net.JoinHostPort(host, fmt.Sprint(dst.Port())))
		},
	})
	return res.ExitCode, err
}

// runChild runs args with env added, forwarding SIGINT/SIGTERM, and returns its exit code.
func runChild(ctx context.Context, args, env []string, stdout, stderr io.Writer, started func(int)) (int, error) {
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 10 * time.Second
	err := c.Start()
	if err == nil {
		if started != nil {
			started(c.Process.Pid)
		}
		err = c.Wait()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("run %s: %w", args[0], err)
	}
	return 0, nil
}

// relayLoopback copies c both ways to the same loopback address outside the sandbox (proxy.Relay).
func relayLoopback(c net.Conn, dst netip.AddrPort, logger *log.Logger) {
	up, err := net.DialTimeout("tcp", dst.String(), 10*time.Second)
	if err != nil {
		logger.Printf("runagain sandbox: %s on this machine's loopback: %v", dst, err)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		return
	}
	proxy.Relay(c, up)
}

// MCPAllow is the MCP part of the side-effect firewall of replay, rerun and test: servers
// (runagain mcp --name) whose unrecorded requests other than tools/call go to the real server,
// and hosts or servers whose unrecorded writes go live.
type MCPAllow struct {
	Servers []string // --allow-mcp
	Writes  []string // --allow-live-writes
}

// StartMCPBroker starts the broker the agent's `runagain mcp` processes talk to: mode
// mcp.ModeRecord, or mcp.ModeReplay serving recorded's MCP exchanges, with cfg's sink, logger
// and redactor and ro's ignored body fields. record says whether exchange spans go to the sink
// (a new run, traceID, is being recorded).
func StartMCPBroker(mode string, recorded ptrace.Traces, cfg proxy.Config, ro proxy.ReplayOptions, allow MCPAllow, record bool, traceID pcommon.TraceID) (*mcp.Broker, error) {
	return mcp.StartBroker(mcp.BrokerConfig{Mode: mode, Recorded: recorded, Record: record, Sink: cfg.Sink, TraceID: traceID, Logger: cfg.Logger,
		Normalizer:   proxy.Normalizer{Redactor: cfg.Redactor, IgnoreBody: ro.IgnoreBody},
		AllowServers: allow.Servers, AllowWrites: allow.Writes})
}
