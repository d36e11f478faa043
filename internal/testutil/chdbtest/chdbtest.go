//go:build chdb

// SPDX-License-Identifier: Apache-2.0

// Package chdbtest serves an embedded ClickHouse engine (chDB, github.com/chdb-io/chdb-go) over
// the ClickHouse HTTP interface on 127.0.0.1, so code that talks to ClickHouse through
// clickhouse-go (the contrib clickhouseexporter, runagain's warm/cold writers and readers) runs
// unchanged against a real engine in tests. Build with -tags chdb; the library is found through
// CHDB_LIB_PATH (the npm package @chdb/lib-linux-x64-gnu ships libchdb.so).
//
// What it covers: the HTTP protocol (queries, DDL, Native-format results, batch inserts whose
// Native-format body is loaded with file(..., 'Native')). What it does not: the native TCP
// protocol (tcp:// endpoints), compression, sessions, auth.
package chdbtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	chdb "github.com/chdb-io/chdb-go/chdb"
)

// Server is a chDB session behind an HTTP listener.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT, a clickhouse-go DSN.
	Endpoint string

	mu      sync.Mutex
	session *chdb.Session
	dir     string
	n       int
	log     []string
}

var insertFormat = regexp.MustCompile(`(?is)^\s*(INSERT\s+INTO\s+.*?)\s+FORMAT\s+Native\s*$`)

// Start starts a server on a fresh data directory; it stops when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if os.Getenv("CHDB_LIB_PATH") == "" {
		tb.Fatal("CHDB_LIB_PATH is not set: point it at libchdb.so (npm package @chdb/lib-linux-x64-gnu)")
	}
	dir := tb.TempDir()
	sess, err := chdb.NewSession(filepath.Join(dir, "db"))
	if err != nil {
		tb.Fatalf("chdb session: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Endpoint: "http://" + l.Addr().String(), session: sess, dir: dir}
	srv := &http.Server{Handler: s}
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() {
		_ = srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		sess.Close()
	})
	return s
}

// Statements returns every SQL statement received so far, in order.
func (s *Server) Statements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Query runs sql directly in the engine and returns the output in format (e.g. "TSV").
func (s *Server) Query(sql, format string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.session.Query(sql, format)
	if err != nil {
		return "", err
	}
	if res.Error() != nil {
		return "", res.Error()
	}
	return string(res.Buf()), nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ping" {
		fmt.Fprintln(w, "Ok.")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	query := q.Get("query")
	if query == "" {
		query, body = string(body), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, query)
	run := query
	if m := insertFormat.FindStringSubmatch(query); m != nil && len(body) > 0 {
		s.n++
		f := filepath.Join(s.dir, fmt.Sprintf("insert-%d.native", s.n))
		if err := os.WriteFile(f, body, 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		run = fmt.Sprintf("%s SELECT * FROM file('%s', 'Native')", m[1], f)
		if tok := q.Get("insert_deduplication_token"); tok != "" {
			run += fmt.Sprintf(" SETTINGS insert_deduplication_token = '%s'", strings.ReplaceAll(tok, "'", ""))
		}
	}
	res, err := s.session.Query(run, "Native")
	if err == nil && res != nil {
		err = res.Error()
	}
	if err != nil {
		w.Header().Set("X-ClickHouse-Exception-Code", "1")
		http.Error(w, fmt.Sprintf("Code: 1. DB::Exception: %v (query: %s)", err, run), http.StatusInternalServerError)
		return
	}
	out, err := reviseNative(res.Buf())
	if err != nil {
		http.Error(w, fmt.Sprintf("Code: 1. DB::Exception: transcode result: %v (query: %s)", err, run), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(out)
}

// reviseNative re-encodes chDB's Native output (protocol revision 0: no block info, no
// serialization flags) at the revision clickhouse-go announces over HTTP
// (client_protocol_version), with clickhouse-go's own block codec.
func reviseNative(in []byte) ([]byte, error) {
	if len(in) == 0 {
		return in, nil
	}
	r := chproto.NewReader(bytes.NewReader(in))
	var buf chproto.Buffer
	for {
		b := proto.Block{ServerContext: &column.ServerContext{Timezone: time.UTC}}
		if err := b.Decode(r, 0); err != nil {
			if errors.Is(err, io.EOF) {
				return buf.Buf, nil
			}
			return nil, err
		}
		if err := b.Encode(&buf, clickhouse.ClientTCPProtocolVersion); err != nil {
			return nil, err
		}
	}
}
