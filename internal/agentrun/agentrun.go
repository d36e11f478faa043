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

// Exit is how a command ended: Code is its exit status (0 for success), or 128+N when signal N
// killed it (the status a POSIX shell reports, so `runagain proxy -- CMD` exits as CMD would
// under sh); Signal names that signal (0 when it exited by itself).
type Exit struct {
	Code   int
	Signal syscall.Signal
}

// String says how the command ended: "exited with code 3", "was killed by signal killed (SIGKILL 9)".
func (e Exit) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("was killed by signal %s (%d)", e.Signal, int(e.Signal))
	}
	return fmt.Sprintf("exited with code %d", e.Code)
}

// exitOf reads how a command ended from its Wait error; ok is false when err is not an exit.
func exitOf(err error) (Exit, bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return Exit{}, false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}, true
	}
	return Exit{Code: ee.ExitCode()}, true
}

// StartError is Run's error when the command could not be started at all (not found, not
// executable, an exec format error): nothing ran, so the callers store no run for it.
type StartError struct {
	Command string
	Err     error
}

func (e *StartError) Error() string { return fmt.Sprintf("cannot run %s: %v", e.Command, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// Run runs args with env added to this process's environment, its stdin this process's, and
// returns how it ended (an error only when it could not be run: a *StartError when it could not
// be started). SIGTERM reaches it when ctx
// ends, and it gets 10 s to exit. Sandboxed, it runs in a network namespace of its own
// (internal/sandbox) whose connections h serves, those to this machine's loopback relayed as
// they are. started, when set, gets the command's pid once it runs.
func Run(ctx context.Context, sandboxed bool, h FlowServer, logger *log.Logger, args, env []string, stdout, stderr io.Writer, started func(int)) (Exit, error) {
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
	return Exit{Code: res.ExitCode, Signal: res.Signal}, err
}

// runChild runs args with env added, forwarding SIGINT/SIGTERM, and returns its exit code.
func runChild(ctx context.Context, args, env []string, stdout, stderr io.Writer, started func(int)) (Exit, error) {
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 10 * time.Second
	if err := c.Start(); err != nil {
		return Exit{Code: -1}, &StartError{Command: args[0], Err: err}
	}
	if started != nil {
		started(c.Process.Pid)
	}
	err := c.Wait()
	if e, ok := exitOf(err); ok {
		return e, nil
	}
	if err != nil {
		return Exit{Code: -1}, fmt.Errorf("run %s: %w", args[0], err)
	}
	return Exit{}, nil
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
