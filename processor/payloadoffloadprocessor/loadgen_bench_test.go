// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// loadgenTraffic makes batches of 256 spans of `runagain loadgen`'s default traffic (resent
// history, 512-byte messages, 5 turns of 3 tool calls per session) as one of loadgen's agents
// exports them: its own SDK batch of its sessions' turns, one session after the other, each
// turn's spans in the order they end (last to first: the SDK exports spans as they end).
type loadgenTraffic struct {
	cfg      loadgen.Config
	sessions [1]*loadgen.Session
	next     int64
	i        int
	trace    uint64
}

func newLoadgenTraffic() *loadgenTraffic { return &loadgenTraffic{cfg: loadgen.DefaultConfig()} }

// batch returns the next batch.
func (g *loadgenTraffic) batch() ptrace.Traces {
	now := time.Unix(1_800_000_000, 0)
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for ss.Len() < 256 {
		g.i = (g.i + 1) % len(g.sessions)
		if g.sessions[g.i] == nil || g.sessions[g.i].Done() {
			g.sessions[g.i] = loadgen.NewSession(&g.cfg, g.next)
			g.next++
		}
		g.trace++
		var tid [16]byte
		binary.BigEndian.PutUint64(tid[8:], g.trace)
		specs := g.sessions[g.i].NextTurn(now)
		for k := range specs {
			// In the order the SDK exports them: loadgen's agents end a turn's spans last to first.
			j := len(specs) - 1 - k
			sp := specs[j]
			s := ss.AppendEmpty()
			s.SetTraceID(tid)
			s.SetSpanID(pcommon.SpanID{byte(j + 1)})
			s.SetName(sp.Name)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End))
			loadgen.PutAttrs(s.Attributes(), sp.Attrs)
		}
	}
	return td
}

// BenchmarkOffloadLoadgen measures the processor on `runagain loadgen`'s default traffic (what
// make bench sends: resent history, 512-byte messages, 256-span batches of one agent's
// sessions) in the pack layout (the default config: file:// bucket, staging directory on the same
// disk), one ConsumeTraces per batch; b.N counts batches. Each batch is generated with the clock
// stopped and the CPU the generation took is left out. Reported: cpu-us/span (process CPU,
// background indexing and uploads until the processor is shut down included), ns/span (wall), and
// allocations per batch with -benchmem (generation included). RUNAGAIN_BENCH_DIR puts the data on
// another disk (default: the test's temporary directory).
//
//	go test ./processor/payloadoffloadprocessor/ -run '^$' -bench OffloadLoadgen -benchtime 200x -benchmem -count 5
//
// Sub-benchmarks: "new" stores each stream's values shortest first (orderChain), "batch-order"
// (the baseline) in the order of the batch, as before.
func BenchmarkOffloadLoadgen(b *testing.B) {
	b.Run("batch-order", func(b *testing.B) {
		saved := orderChain
		orderChain = func([]*job) {}
		defer func() { orderChain = saved }()
		benchmarkOffloadLoadgen(b)
	})
	b.Run("new", benchmarkOffloadLoadgen)
}

func benchmarkOffloadLoadgen(b *testing.B) {
	base := b.TempDir()
	if d := os.Getenv("RUNAGAIN_BENCH_DIR"); d != "" {
		var err error
		if base, err = os.MkdirTemp(d, "offload-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(base) })
	}
	cfg := testConfig("file://" + base + "/blobs?create_dir=true&metadata=skip")
	cfg.payloads.Dir = base + "/payloads"
	h := newHarness(b, cfg)
	ctx := context.Background()
	g := newLoadgenTraffic()
	spans := 0
	var gen time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchtest.CPUTime()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := benchtest.CPUTime()
		td := g.batch()
		spans += td.SpanCount()
		gen += benchtest.CPUTime() - c
		b.StartTimer()
		if err := h.traces.ConsumeTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
		h.tsink.Reset()
	}
	// The extension closes the store after the processors: the background work left counts.
	h.stop()
	b.StopTimer()
	cpu := benchtest.CPUTime() - cpu0 - gen
	b.ReportMetric(float64(cpu.Microseconds())/float64(spans), "cpu-us/span")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
	b.ReportMetric(float64(diskBytes(b, base))/float64(spans), "disk-B/span")
}

// diskBytes is the space the files under dir occupy on disk (allocated blocks, not apparent
// sizes): the packs in the bucket, the staging area and the digest index.
func diskBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
