// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/codes"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// benchRequests builds n OTLP requests of the bench's shape: the loadgen's default agent
// sessions (make bench's traffic), 256 spans per request in the order the turns end (a trace's
// spans may straddle two requests), every string value over 512 bytes replaced by a payload
// reference of the bench's length (183 characters: the payload offload runs before the hot tier).
func benchRequests(n int, seed uint64) []ptrace.Traces {
	cfg := loadgen.DefaultConfig()
	cfg.Seed = seed
	out := make([]ptrace.Traces, 0, n)
	td := ptrace.NewTraces()
	ss := newBenchScope(td)
	now := time.Unix(1_700_000_000, 0)
	var traceNo uint64
	for si := int64(0); len(out) < n; si++ {
		s := loadgen.NewSession(&cfg, si)
		for !s.Done() && len(out) < n {
			specs := s.NextTurn(now)
			now = now.Add(time.Second)
			traceNo++
			tid := pcommon.TraceID{byte(seed), 0xbe, byte(traceNo >> 24), byte(traceNo >> 16), byte(traceNo >> 8), byte(traceNo), 7}
			for i, sp := range specs {
				addBenchSpan(ss, tid, i, sp)
				if ss.Spans().Len() == 256 {
					out = append(out, td)
					td = ptrace.NewTraces()
					ss = newBenchScope(td)
					if len(out) == n {
						break
					}
				}
			}
		}
	}
	return out
}

// writeConcurrently writes reqs to db from writers goroutines, each taking the next request,
// and returns when all are written (an error fails b).
func writeConcurrently(ctx context.Context, b *testing.B, db *DB, reqs []ptrace.Traces, writers int) {
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				if i == len(reqs) {
					next.Unlock()
					return
				}
				td := reqs[i]
				i++
				next.Unlock()
				if _, err := db.WriteTraces(ctx, td); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func newBenchScope(td ptrace.Traces) ptrace.ScopeSpans {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "loadgen-agent")
	rs.Resource().Attributes().PutStr("telemetry.sdk.name", "opentelemetry")
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
	rs.Resource().Attributes().PutStr("telemetry.sdk.version", "1.39.0")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/runagain/runagain/internal/loadgen")
	return ss
}

func addBenchSpan(ss ptrace.ScopeSpans, tid pcommon.TraceID, i int, sp loadgen.SpanSpec) {
	s := ss.Spans().AppendEmpty()
	s.SetTraceID(tid)
	s.SetSpanID(pcommon.SpanID{tid[2], tid[3], tid[4], tid[5], 0, 0, byte(i >> 8), byte(i + 1)})
	if sp.Parent >= 0 {
		s.SetParentSpanID(pcommon.SpanID{tid[2], tid[3], tid[4], tid[5], 0, 0, byte(sp.Parent >> 8), byte(sp.Parent + 1)})
	}
	s.SetName(sp.Name)
	s.SetKind(ptrace.SpanKind(sp.Kind + 1))
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End))
	if sp.Status == codes.Error {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(sp.StatusMessage)
	}
	// The span's attributes as the collector receives them (loadgen.PutAttrs), in order, with
	// every string over 512 bytes replaced by its reference: the payload offload runs before the
	// hot tier.
	raw := pcommon.NewMap()
	loadgen.PutAttrs(raw, sp.Attrs)
	attrs := s.Attributes()
	attrs.EnsureCapacity(raw.Len())
	for k, v := range raw.All() {
		if v.Type() == pcommon.ValueTypeStr && len(v.Str()) > 512 {
			sum := sha256.Sum256([]byte(v.Str()))
			attrs.PutStr(k+"_ref", "s3://runagain-payloads/runagain/packs/2026/12/01/0a1b2c3d4e5f60718293a4b5c6d7e8f9.pack#"+hex.EncodeToString(sum[:]))
			continue
		}
		v.CopyTo(attrs.PutEmpty(k))
	}
	if sp.ExceptionType != "" {
		e := s.Events().AppendEmpty()
		e.SetName("exception")
		e.SetTimestamp(pcommon.NewTimestampFromTime(sp.End))
		e.Attributes().PutStr("exception.type", sp.ExceptionType)
		e.Attributes().PutStr("exception.message", sp.ExceptionMessage)
	}
}

// BenchmarkHotWrite writes the bench's requests (benchRequests: 256 agent spans each) to a hot
// file whose dictionary is trained, one request per op, from 1 writer (serial) or 4 concurrent
// writers (parallel4: the bench's 4 clients, each waiting for its request's commit), in the ways
// the writer can, measured in the same run: "rows" compresses every span row alone and commits
// every call alone (before schema version 7), "frames" compresses the spans of a trace in a
// request together (frames.go), "group" adds the shared transactions of concurrent calls
// (groupcommit.go). It reports ns/span (wall time per span over all writers), cpu-ns/span (the
// process's CPU time per span) and the file's bytes per span at the end (file-B/span, after a
// checkpoint); -benchmem's B/op and allocs/op are per request.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench HotWrite$ -benchmem -benchtime 200x -count 5
func BenchmarkHotWrite(b *testing.B) {
	for _, mode := range []string{"rows", "frames", "group"} {
		for _, writers := range []int{1, 4} {
			name := mode + "/serial"
			if writers > 1 {
				name = mode + "/parallel4"
			}
			b.Run(name, func(b *testing.B) { benchHotWrite(b, writers, mode) })
		}
	}
}

// openBenchHot opens a new hot file in b's temporary directory, closed when b ends.
func openBenchHot(b *testing.B) (*DB, string) {
	path := filepath.Join(b.TempDir(), "hot.db")
	db, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, path
}

func benchHotWrite(b *testing.B, writers int, mode string) {
	ctx := context.Background()
	db, path := openBenchHot(b)
	db.rowFrames = mode == "rows"
	db.group.off = mode != "group"
	// Train the dictionary first (trainSpans spans), as on a file in use.
	for _, td := range benchRequests(trainSpans/256+2, 99) {
		if _, err := db.WriteTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
	}
	if db.codec.enc == nil {
		b.Fatal("no dictionary trained")
	}
	reqs := benchRequests(b.N, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchtest.CPUTime()
	writeConcurrently(ctx, b, db, reqs, writers)
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/span")
	// CPU time of the process (all threads, GC included) per span: on a shared machine it
	// varies less than wall time.
	b.ReportMetric(float64(benchtest.CPUTime()-cpu0)/float64(b.N*256), "cpu-ns/span")
	var size int64
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	if _, err := db.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err == nil {
		if st, err := os.Stat(path); err == nil {
			size = st.Size()
		}
	}
	b.ReportMetric(float64(size)/float64((b.N+trainSpans/256+2)*256), "file-B/span")
}
