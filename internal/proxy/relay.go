// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"io"
	"net"
	"sync"
)

// Relay copies bytes both ways between client and upstream until both directions are over, and
// closes both. It is the one relay of the proxy: an opaque flow or tunnel (flows.relay) and a
// sandboxed command's connection to this machine's loopback (cmd/runagain) both use it.
//
//   - A direction that reaches EOF half-closes the other side's write (TCP FIN), so a peer that
//     shuts down its write first (an HTTP/1.0 client, a request/response protocol) still gets
//     its answer.
//   - A direction that ends in an error (a reset, a closed socket) aborts both connections with a
//     reset (SO_LINGER 0): the peer sees the connection fail, never a clean end that would make
//     a truncated exchange look complete.
//
// up and down are the bytes copied client -> upstream and upstream -> client.
func Relay(client, upstream net.Conn) (up, down int64) {
	var once sync.Once
	abort := func() {
		once.Do(func() {
			reset(client)
			reset(upstream)
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		down, err = io.Copy(client, upstream)
		if err != nil {
			abort()
			return
		}
		closeWrite(client)
	}()
	var err error
	up, err = io.Copy(upstream, client)
	if err != nil {
		abort()
	} else {
		closeWrite(upstream)
	}
	wg.Wait()
	client.Close()
	upstream.Close()
	return up, down
}

// reset closes c so that its peer gets a TCP reset, not a FIN.
func reset(c net.Conn) {
	if p, ok := c.(*peekedConn); ok {
		c = p.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func closeWrite(c net.Conn) {
	type cw interface{ CloseWrite() error }
	if x, ok := c.(cw); ok {
		_ = x.CloseWrite()
		return
	}
	if p, ok := c.(*peekedConn); ok {
		closeWrite(p.Conn)
	}
}
