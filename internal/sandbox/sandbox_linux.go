//go:build linux

// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

func available() error {
	if os.Geteuid() == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("user namespaces are disabled on this kernel (user.max_user_namespaces = 0); run as root")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return errors.New("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1); run as root")
	}
	return nil
}

func run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Args) == 0 {
		return Result{}, errors.New("network sandbox: no command")
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Result{}, fmt.Errorf("network sandbox: socketpair: %w", err)
	}
	parentEnd := os.NewFile(uintptr(pair[0]), "sandbox-parent")
	childEnd := os.NewFile(uintptr(pair[1]), "sandbox-child")
	defer parentEnd.Close()

	c := exec.Command("/proc/self/exe")
	c.Args = append([]string{"runagain-sandbox"}, cfg.Args...)
	c.Env = append(withoutInit(cfg.Env), initEnv+"=3") // ExtraFiles[0] is fd 3
	c.ExtraFiles = []*os.File{childEnd}
	c.Dir = cfg.Dir
	c.Stdin, c.Stdout, c.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		// A user namespace makes the namespace's set-up possible without root: the caller's ids
		// map to themselves, and CAP_NET_ADMIN (ambient) survives the exec into Init, which
		// clears it before it execs the command.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	}
	c.SysProcAttr = attr
	if err := c.Start(); err != nil {
		childEnd.Close()
		return Result{}, fmt.Errorf("network sandbox: starting the namespace: %w (%s)", err, hint())
	}
	childEnd.Close()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	// kill ends a child whose set-up failed; its exit status says nothing more.
	kill := func() error {
		_ = c.Process.Kill()
		return <-waited
	}

	tcpFd, udpFd, setupErr := receive(int(parentEnd.Fd()))
	if setupErr != nil {
		_ = kill()
		return Result{}, fmt.Errorf("network sandbox: %w", setupErr)
	}
	if cfg.Started != nil {
		cfg.Started(c.Process.Pid)
	}
	// net.FileListener and FilePacketConn dup the descriptor; the *os.File owns the original
	// and is the one to close it. (Closing the number with unix.Close instead left the File's
	// finalizer to close it a second time, at some later GC: by then the number was a relayed
	// connection's or a splice pipe's, which failed with EBADF and made clients see EOF
	// mid-exchange, and retry a request the upstream had already answered.)
	tcpFile, udpFile := os.NewFile(uintptr(tcpFd), "sandbox-tcp"), os.NewFile(uintptr(udpFd), "sandbox-dns")
	l, err := net.FileListener(tcpFile)
	tcpFile.Close()
	if err != nil {
		udpFile.Close()
		_ = kill()
		return Result{}, fmt.Errorf("network sandbox: %w", err)
	}
	pc, err := net.FilePacketConn(udpFile)
	udpFile.Close()
	if err != nil {
		l.Close()
		_ = kill()
		return Result{}, fmt.Errorf("network sandbox: %w", err)
	}
	nm := newNames()
	dnsSrv := &dns.Server{PacketConn: pc, Handler: nm}
	go func() { _ = dnsSrv.ActivateAndServe() }()
	var flows int
	var mu sync.Mutex
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			dst, err := originalDst(conn)
			if err != nil {
				cfg.Logger.Printf("runagain sandbox: a connection without its original destination was closed: %v", err)
				conn.Close()
				continue
			}
			mu.Lock()
			flows++
			mu.Unlock()
			go cfg.Flow(conn, dst, nm.name(dst.Addr()))
		}
	}()

	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-waited:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			werr = <-waited
		}
	}
	l.Close()
	<-accepted
	_ = dnsSrv.Shutdown()
	nm.mu.Lock()
	res := Result{Flows: flows, Queries: nm.queries}
	nm.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode, res.Signal = 128+int(ws.Signal()), ws.Signal()
		}
	case werr != nil:
		return res, fmt.Errorf("run %s: %w", cfg.Args[0], werr)
	}
	return res, nil
}

// hint says what usually stops a namespace from being created.
func hint() string {
	if err := available(); err != nil {
		return err.Error()
	}
	if os.Geteuid() != 0 {
		return "creating a user and network namespace was refused; run as root, or use --no-sandbox"
	}
	return "creating a network namespace was refused (a container without CAP_SYS_ADMIN?); use --no-sandbox"
}

// receive reads Init's one message: "ok" with the TCP and UDP listeners' descriptors, or the
// reason it failed. A child that died first gives EOF.
func receive(fd int) (tcpFd, udpFd int, err error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("reading from the namespace: %w", err)
	}
	if n == 0 {
		return -1, -1, fmt.Errorf("the namespace's first process exited before it was set up (%s)", hint())
	}
	msg := string(buf[:n])
	if msg != "ok" {
		return -1, -1, errors.New(strings.TrimPrefix(msg, "error: "))
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(cmsgs) != 1 {
		return -1, -1, fmt.Errorf("the namespace sent no sockets (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&cmsgs[0])
	if err != nil || len(fds) != 2 {
		return -1, -1, fmt.Errorf("the namespace sent %d sockets, not 2 (%v)", len(fds), err)
	}
	return fds[0], fds[1], nil
}

// originalDst is where the redirected connection was addressed (SO_ORIGINAL_DST, from the
// namespace's connection tracking).
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%T is not TCP", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var mreq *unix.IPv6Mreq
	var serr error
	if err := rc.Control(func(fd uintptr) {
		mreq, serr = unix.GetsockoptIPv6Mreq(int(fd), unix.IPPROTO_IP, unix.SO_ORIGINAL_DST)
	}); err != nil {
		return netip.AddrPort{}, err
	}
	if serr != nil {
		return netip.AddrPort{}, fmt.Errorf("SO_ORIGINAL_DST: %w", serr)
	}
	// struct sockaddr_in: family (2 bytes), port (big endian), address.
	m := mreq.Multiaddr
	port := uint16(m[2])<<8 | uint16(m[3])
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{m[4], m[5], m[6], m[7]}), port), nil
}

func withoutInit(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, initEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// initChild is the namespace's first process: set up, hand the sockets over, exec the command.
func initChild() {
	v := os.Getenv(initEnv)
	if v == "" {
		return
	}
	sock, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "runagain sandbox: %s=%q\n", initEnv, v)
		os.Exit(125)
	}
	tcpFd, udpFd, err := setupNamespace()
	if err != nil {
		_ = unix.Sendmsg(sock, []byte("error: "+err.Error()), nil, nil, 0)
		os.Exit(125)
	}
	if err := unix.Sendmsg(sock, []byte("ok"), unix.UnixRights(tcpFd, udpFd), nil, 0); err != nil {
		fmt.Fprintf(os.Stderr, "runagain sandbox: handing the sockets over: %v\n", err)
		os.Exit(125)
	}
	unix.Close(tcpFd)
	unix.Close(udpFd)
	unix.Close(sock)
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	env := withoutInit(os.Environ())
	args := os.Args[1:]
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "runagain: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "runagain: exec %s: %v\n", args[0], err)
	os.Exit(126)
}
