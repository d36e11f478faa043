// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	Init()
	if os.Getenv("SANDBOX_TEST_NOOP") != "" {
		return // the probe's child: it could be started in a user namespace
	}
	if os.Getenv("SANDBOX_TEST_PROBE") != "" {
		// Can this user create a user namespace? Start a child that does nothing in one.
		c := exec.Command("/proc/self/exe")
		c.Env = append(os.Environ(), "SANDBOX_TEST_NOOP=1")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		if out, err := c.CombinedOutput(); err != nil {
			fmt.Printf("%v %s", err, out)
			os.Exit(1)
		}
		return
	}
	if os.Getenv("SANDBOX_TEST_HELPER") != "" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper runs inside the sandbox: a name lookup, TCP to that name, to an IP literal of TEST-NET-1
// (RFC 5737; it can only be answered inside the namespace) and to loopback.
func helper() {
	if d, err := time.ParseDuration(os.Getenv("SANDBOX_TEST_DELAY")); err == nil {
		time.Sleep(d) // TestRunSurvivesGarbageCollection: the parent collects garbage meanwhile
	}
	// Who the command is: its uid inside the namespace and its effective capabilities (Init
	// clears the ambient CAP_NET_ADMIN of the unprivileged path before it execs the command).
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "CapEff:") {
				fmt.Printf("uid %d %s\n", os.Getuid(), strings.Join(strings.Fields(l), " "))
			}
		}
	}
	r := &net.Resolver{PreferGo: true}
	addrs, err := r.LookupHost(context.Background(), "tool.example.com")
	fmt.Printf("lookup %v %v\n", addrs, err)
	for _, target := range []string{"tool.example.com:80", "192.0.2.1:9", os.Getenv("SANDBOX_TEST_LOOPBACK")} {
		c, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			fmt.Printf("dial %s: %v\n", target, err)
			continue
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("dial %s: %q %v\n", target, line, err)
		c.Close()
	}
	if u, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		_, err = u.Write([]byte("x"))
		fmt.Printf("udp write: %v\n", err)
	}
}

func TestRunHandsEveryConnectionToFlow(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	var mu sync.Mutex
	var seen []string
	cfg := Config{
		Args: []string{os.Args[0]},
		Env:  append(os.Environ(), "SANDBOX_TEST_HELPER=1", "SANDBOX_TEST_LOOPBACK=127.0.0.1:4317"),
		Flow: func(c net.Conn, dst netip.AddrPort, name string) {
			defer c.Close()
			mu.Lock()
			seen = append(seen, dst.String()+" "+name)
			mu.Unlock()
			fmt.Fprintf(c, "served %s %s\n", dst, name)
		},
	}
	var out bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &out
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err, out.String())
	require.Equal(t, 0, res.ExitCode, out.String())
	o := out.String()
	assert.Contains(t, o, "lookup [198.18.0.2] <nil>")
	assert.Contains(t, o, `dial tool.example.com:80: "served 198.18.0.2:80 tool.example.com\n"`)
	assert.Contains(t, o, `dial 192.0.2.1:9: "served 192.0.2.1:9 \n"`)
	assert.Contains(t, o, `dial 127.0.0.1:4317: "served 127.0.0.1:4317 \n"`)
	assert.Equal(t, 3, res.Flows)
	assert.GreaterOrEqual(t, res.Queries, 1)
	mu.Lock()
	assert.Len(t, seen, 3)
	mu.Unlock()
	assert.NotContains(t, o, "network is unreachable")
	// Anything but TCP and DNS is dropped inside the namespace: the datagram is refused at once.
	assert.Contains(t, o, "udp write: write udp 169.254.77.1:")
	assert.Contains(t, o, "operation not permitted")
	if os.Geteuid() != 0 {
		// The user-namespace path: the caller's uid maps to itself, and the command runs with no
		// capability at all (CAP_NET_ADMIN was only Init's, to set the namespace up).
		assert.Contains(t, o, fmt.Sprintf("uid %d CapEff: 0000000000000000\n", os.Getuid()))
	}
}

// TestRunSurvivesGarbageCollection: the descriptors the namespace hands over are closed once.
// The parent used to close them by number while *os.File values still owned them, so a later GC
// ran their finalizers and closed the same numbers again, by then a relayed connection's, the
// DNS socket's or a splice pipe's: clients saw EOF mid-exchange (openai-go then retried a call
// the upstream had answered). Here the parent collects garbage while the command waits, then the
// command resolves a name and opens its connections.
func TestRunSurvivesGarbageCollection(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.GC()
			}
		}
	}()
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{
		Args: []string{os.Args[0]},
		Env:  append(os.Environ(), "SANDBOX_TEST_HELPER=1", "SANDBOX_TEST_DELAY=500ms", "SANDBOX_TEST_LOOPBACK=127.0.0.1:4317"),
		Flow: func(c net.Conn, dst netip.AddrPort, name string) {
			defer c.Close()
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
			fmt.Fprintf(c, "served %s %s\n", dst, name)
		},
		Stdout: &out, Stderr: &out,
	})
	close(stop)
	<-gcDone
	require.NoError(t, err, out.String())
	o := out.String()
	assert.Contains(t, o, "lookup [198.18.0.2] <nil>")
	assert.Contains(t, o, `dial tool.example.com:80: "served 198.18.0.2:80 tool.example.com\n"`)
	assert.Contains(t, o, `dial 192.0.2.1:9: "served 192.0.2.1:9 \n"`)
	assert.Contains(t, o, `dial 127.0.0.1:4317: "served 127.0.0.1:4317 \n"`)
	assert.Equal(t, 3, res.Flows, o)
}

// nobody is the unprivileged uid and gid TestRunAsUnprivilegedUser runs the sandbox as.
const nobody = 65534

// TestRunAsUnprivilegedUser covers the path a non-root user takes (a user namespace, CAP_NET_ADMIN
// ambient only in Init): run as root, it re-runs TestRunHandsEveryConnectionToFlow as uid and
// gid 65534 (SysProcAttr.Credential) from a copy of the test binary that user can execute. It
// skips only when the kernel refuses that user a user namespace (probed first with a process
// that does nothing else), naming the refusal.
func TestRunAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: TestRunHandsEveryConnectionToFlow runs the user-namespace path itself")
	}
	dir, err := os.MkdirTemp("", "sandbox-nobody-") // t.TempDir's parent is private to root
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		if fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by uid %d, so the test binary cannot be run as that user", d, nobody)
		}
	}
	bin := filepath.Join(dir, "sandbox.test")
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, self, 0o755))
	asNobody := func(env []string, args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), env...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true}}
		return c
	}

	// The probe: that user starts a process in a user namespace and nothing else (TestMain).
	// Only the kernel (or a seccomp policy) can refuse it.
	probe := asNobody([]string{"SANDBOX_TEST_PROBE=1"})
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("the kernel refuses uid %d a user namespace: %v %s", nobody, err, out)
	}
	if err := available(); err != nil {
		t.Skipf("the kernel refuses unprivileged user namespaces: %v", err)
	}

	run := asNobody(nil, "-test.run=^TestRunHandsEveryConnectionToFlow$", "-test.count=1", "-test.v")
	out, err := run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestRunHandsEveryConnectionToFlow", "%s", out)
	assert.NotContains(t, string(out), "--- SKIP", "%s", out)
	t.Logf("as uid %d:\n%s", nobody, out)
}
