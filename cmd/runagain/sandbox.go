// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/sandbox"
)

// sandboxOptions are --sandbox and --no-sandbox of proxy --record, replay, rerun and test.
type sandboxOptions struct {
	on, off bool
	def     bool // on unless --no-sandbox (replay, rerun, test on Linux)
}

func (s *sandboxOptions) flags(cmd *cobra.Command, def bool) {
	s.def = def && runtime.GOOS == "linux"
	f := cmd.Flags()
	what := "run COMMAND in a network namespace of its own whose only way out is the proxy: every TCP connection, to any address, and every DNS query is captured (Linux"
	if s.def {
		what += "; the default here"
	}
	f.BoolVar(&s.on, "sandbox", false, what+")")
	f.BoolVar(&s.off, "no-sandbox", false, "run COMMAND without the network sandbox (only clients that honour the proxy settings are captured)")
}

// flowServer serves a connection the sandbox captured (proxy.Recorder, proxy.Replayer).
type flowServer interface {
	ServeFlow(c net.Conn, hostport string)
}

// enabled decides whether COMMAND runs sandboxed. Asked for with --sandbox where it cannot work,
// it is an error; on by default where it cannot work, a warning says what is not captured.
func (s *sandboxOptions) enabled(verb string, errOut io.Writer) (bool, error) {
	if s.on && s.off {
		return false, fmt.Errorf("--sandbox and --no-sandbox contradict each other")
	}
	if s.off || (!s.on && !s.def) {
		return false, nil
	}
	if err := sandbox.Available(); err != nil {
		if s.on {
			return false, fmt.Errorf("--sandbox: %w", err)
		}
		fmt.Fprintf(errOut, "runagain %s: no network sandbox: %v; connections of clients that ignore the proxy settings are neither recorded nor stopped (--no-sandbox silences this)\n", verb, err)
		return false, nil
	}
	return true, nil
}

// runAgent runs args with env added, sandboxed (its captured connections served by h) or not,
// and returns its exit code. started (if set) gets the command's pid once it runs.
func runAgent(ctx context.Context, sandboxed bool, h flowServer, logger *log.Logger, args, env []string, stdout, stderr io.Writer, started ...func(int)) (int, error) {
	var onStart func(int)
	if len(started) > 0 {
		onStart = started[0]
	}
	if !sandboxed {
		return runChild(ctx, args, env, stdout, stderr, onStart)
	}
	res, err := sandbox.Run(ctx, sandbox.Config{
		Args: args, Env: append(os.Environ(), env...), Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Logger: logger, Started: onStart,
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
