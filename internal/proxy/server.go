// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// SelfHosts lists the host:port forms that address a proxy listening on addr, for
// Config.SelfHosts ("127.0.0.1:8765", "localhost:8765").
func SelfHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{addr.String()}
	}
	p := strconv.Itoa(tcp.Port)
	return []string{addr.String(), "localhost:" + p, "127.0.0.1:" + p, "[::1]:" + p}
}

// Server runs a proxy handler on a listener.
type Server struct {
	srv   *http.Server
	flows *flows // the handler's CONNECT and sandbox flows, waited for by Shutdown
	done  chan error
}

// Serve starts serving h on l in the background.
func Serve(l net.Listener, h http.Handler) *Server {
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}, done: make(chan error, 1)}
	switch x := h.(type) {
	case *Recorder:
		s.flows = x.flows
	case *Replayer:
		s.flows = x.flows
	}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s
}

// Shutdown stops accepting, waits up to timeout for in-flight exchanges, then closes.
func (s *Server) Shutdown(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	if s.flows != nil {
		s.flows.shutdown(ctx)
	}
	if e := <-s.done; e != nil && err == nil {
		err = e
	}
	return err
}
