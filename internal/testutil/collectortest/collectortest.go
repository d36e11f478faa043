// SPDX-License-Identifier: Apache-2.0

// Package collectortest runs the real otelcol-runagain binary (built by `make build`) for
// end-to-end tests: on free loopback ports, on a data directory of the test's choosing.
//
// The binaries are found through RUNAGAIN_BIN_DIR (the Makefile's `make test` sets it to bin/).
// Without it a test is skipped, unless CI is set, where it fails: CI never passes by not running.
package collectortest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BinDir returns the directory holding otelcol-runagain and runagain, or skips/fails tb. Under
// -short (make test-race: unit packages only, race-built test binaries) a test that drives the
// real binaries is skipped; `make test` runs it.
func BinDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("RUNAGAIN_BIN_DIR")
	if dir == "" {
		if testing.Short() {
			tb.Skip("-short: end-to-end tests on the real binaries run in `make test`")
		}
		if os.Getenv("CI") != "" {
			tb.Fatal("RUNAGAIN_BIN_DIR is not set: run the tests with `make test`")
		}
		tb.Skip("RUNAGAIN_BIN_DIR is not set: run `make test` to build the binaries and run end-to-end tests")
	}
	for _, b := range []string{"otelcol-runagain", "runagain"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			tb.Fatalf("binary %s missing in RUNAGAIN_BIN_DIR=%s: %v", b, dir, err)
		}
	}
	return dir
}

// RepoRoot is the repository root (where config/ lives), found from this source file.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "builder-config.yaml")); err == nil {
			return d
		}
	}
	tb.Fatalf("repository root not found above %s", wd)
	return ""
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartOnFreePorts calls start with n free TCP ports on 127.0.0.1 (FreePort) and returns the
// ports start succeeded on. FreePort closes its listener before start binds, so another test
// process (go test runs packages in parallel) can take a port in between; the bind then fails
// with EADDRINUSE and nothing was served yet, so start is called again on fresh ports, at most
// five times. Any other error fails tb. start must release whatever it bound before it returns
// an error (e.g. shut the component down when its Start failed half way).
func StartOnFreePorts(tb testing.TB, n int, start func(ports []int) error) []int {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		ports := make([]int, n)
		for i := range ports {
			ports[i] = FreePort(tb)
		}
		err := start(ports)
		if err == nil {
			return ports
		}
		if attempt < 5 && errors.Is(err, syscall.EADDRINUSE) {
			tb.Logf("start attempt %d lost a port race (%v), retrying on fresh ports", attempt, err)
			continue
		}
		tb.Fatalf("start on ports %v: %v", ports, err)
		return nil
	}
}

// Collector is a running otelcol-runagain process.
type Collector struct {
	tb      testing.TB
	Config  string
	DataDir string
	// Endpoints on 127.0.0.1.
	GRPC, HTTP, Health string
	TelemetryPort      int
	Env                []string
	cmd                *exec.Cmd
	out                *syncBuffer
	done               chan struct{}
}

// Options for Start. Zero values pick config/default.yaml, a fresh temp data dir and free ports.
type Options struct {
	Config  string
	DataDir string
	Env     []string // extra KEY=VALUE pairs
}

// Start runs the collector and waits until its health check answers (30 s at most).
// It is stopped (SIGTERM) when the test ends.
func Start(tb testing.TB, o Options) *Collector {
	tb.Helper()
	bin := BinDir(tb)
	if o.Config == "" {
		o.Config = filepath.Join(RepoRoot(tb), "config", "default.yaml")
	}
	if o.DataDir == "" {
		o.DataDir = tb.TempDir()
	}
	c := &Collector{tb: tb, Config: o.Config, DataDir: o.DataDir}
	// FreePort closes its listener before the collector binds, so another test process (go test
	// runs packages in parallel) can take the port in between: a start that fails with "address
	// already in use" is tried again on fresh ports, at most three times.
	for attempt := 1; ; attempt++ {
		c.GRPC = fmt.Sprintf("127.0.0.1:%d", FreePort(tb))
		c.HTTP = fmt.Sprintf("127.0.0.1:%d", FreePort(tb))
		c.Health = fmt.Sprintf("127.0.0.1:%d", FreePort(tb))
		c.TelemetryPort = FreePort(tb)
		c.Env = append(os.Environ(),
			"RUNAGAIN_DATA_DIR="+c.DataDir,
			"RUNAGAIN_OTLP_GRPC_ENDPOINT="+c.GRPC,
			"RUNAGAIN_OTLP_HTTP_ENDPOINT="+c.HTTP,
			"RUNAGAIN_HEALTH_ENDPOINT="+c.Health,
			fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", c.TelemetryPort),
			fmt.Sprintf("RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:%d", FreePort(tb)),
		)
		c.Env = append(c.Env, o.Env...)
		err := c.tryStart(bin)
		if err == nil {
			break
		}
		if attempt < 3 && strings.Contains(c.out.String(), "address already in use") {
			tb.Logf("collector start attempt %d lost a port race, retrying on fresh ports", attempt)
			continue
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Stop() })
	return c
}

func (c *Collector) start(bin string) {
	c.tb.Helper()
	if err := c.tryStart(bin); err != nil {
		c.tb.Fatal(err)
	}
}

// tryStart starts the process and waits until its health check answers (30 s at most); on
// failure the process has ended and the error holds its output.
func (c *Collector) tryStart(bin string) error {
	c.out = &syncBuffer{}
	c.cmd = exec.Command(filepath.Join(bin, "otelcol-runagain"), "--config", c.Config)
	c.cmd.Env = c.Env
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start collector: %w", err)
	}
	c.done = make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("collector exited at start:\n%s", c.out.String())
		default:
		}
		resp, err := http.Get("http://" + c.Health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	return fmt.Errorf("collector not healthy after 30s:\n%s", c.out.String())
}

// Restart stops the collector gracefully and starts it again with the same config, ports and data.
func (c *Collector) Restart() {
	c.tb.Helper()
	c.Stop()
	c.start(BinDir(c.tb))
}

// Kill sends SIGKILL (a crash) and waits for the process to end.
func (c *Collector) Kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// StartAgain starts the collector again after Kill or Stop.
func (c *Collector) StartAgain() {
	c.tb.Helper()
	c.start(BinDir(c.tb))
}

// Stop sends SIGTERM and waits up to 30 s, then kills.
func (c *Collector) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.done
	}
}

// Output is what the collector printed so far.
func (c *Collector) Output() string { return c.out.String() }

// CLI runs bin/runagain with args against this collector's data directory and endpoint.
// It returns stdout, stderr and the error of the run.
func (c *Collector) CLI(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(BinDir(c.tb), "runagain"), args...)
	cmd.Env = append(c.Env, "RUNAGAIN_ENDPOINT="+c.GRPC)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// Pid of the running process.
func (c *Collector) Pid() int { return c.cmd.Process.Pid }

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
