// SPDX-License-Identifier: Apache-2.0

// Package sandbox runs a command in a network namespace of its own whose only way out is the
// caller: every TCP connection the command opens, to any address, is accepted inside the
// namespace and handed to Config.Flow with its original destination, and every DNS query is
// answered by a small responder (github.com/miekg/dns) with an address from a private pool
// (198.18.0.0/15, RFC 2544's benchmarking range) that maps back to the queried name. Nothing else
// leaves: the namespace has loopback and a veth pair whose both ends stay inside it, an nftables
// table (github.com/google/nftables) redirects TCP and UDP port 53 to the two sockets, and drops
// any other packet whose output interface is not loopback.
//
// Shape (Linux): the caller re-executes its own binary (/proc/self/exe) with CLONE_NEWNET, and
// CLONE_NEWUSER with the caller's uid mapped to itself and CAP_NET_ADMIN as an ambient capability
// when it is not root. That child (Init, which main and TestMain call first) sets the namespace
// up with netlink (github.com/vishvananda/netlink), opens the listeners there, passes their file
// descriptors to the parent over a socket pair (SCM_RIGHTS), drops its capabilities and execs
// the command. The parent serves the listeners: connections keep the namespace they were
// accepted in, and the original destination is read with SO_ORIGINAL_DST.
//
// Elsewhere (other systems, or a kernel that refuses the namespaces) Available says why and
// Run fails.
package sandbox

import (
	"context"
	"io"
	"log"
	"net"
	"net/netip"
	"syscall"
)

// initEnv names the environment variable that makes Init act as the sandbox's first process;
// its value is the file descriptor number of the socket to the parent.
const initEnv = "RUNAGAIN_SANDBOX_INIT"

// Config is a command to run in a sandbox and what serves its connections.
type Config struct {
	// Args is the command and its arguments (Args[0] is looked up in PATH of Env).
	Args []string
	// Env is the command's whole environment (os.Environ() plus additions).
	Env []string
	// Dir is the working directory ("" keeps the caller's).
	Dir            string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Flow serves one TCP connection of the command. dst is the address it connected to; name
	// is the DNS name the sandbox's resolver answered with dst ("" when dst came from no query,
	// e.g. an IP literal). Flow owns conn and must close it. It runs on its own goroutine.
	Flow func(conn net.Conn, dst netip.AddrPort, name string)
	// Logger receives one line per failure to serve a connection; default log.Default().
	Logger *log.Logger
	// Started, when set, is called with the command's pid once it runs (the namespace's first
	// process execs the command, so the pid is the command's).
	Started func(pid int)
}

// Result is what Run observed.
type Result struct {
	// ExitCode is the command's exit status, or 128+N when signal N (Signal) killed it.
	ExitCode int
	Signal   syscall.Signal
	// Flows is the number of TCP connections handed to Config.Flow; Queries the DNS questions answered.
	Flows, Queries int
}

// Run starts cfg.Args in a new network namespace, serves its connections until it exits and
// returns its exit code. ctx's cancellation sends the command SIGTERM (then SIGKILL after 10 s).
// An error means the sandbox could not be set up or the command could not be started.
func Run(ctx context.Context, cfg Config) (Result, error) { return run(ctx, cfg) }

// Available reports nil when Run can work here, else why not (the system, or the kernel refusing
// a network namespace to this user).
func Available() error { return available() }

// Init must be called first in main (and in TestMain of tests that run sandboxed commands): in
// the sandbox's first process it sets the namespace up and execs the command, never returning;
// anywhere else it returns at once.
func Init() { initChild() }
