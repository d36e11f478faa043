// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// benchDir is a temporary directory on tmpfs when the machine has one (/dev/shm), so that the
// per-batch fsync (a constant of the disk, not of this code) does not hide the CPU the store
// spends; else b.TempDir().
func benchDir(b *testing.B) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "payloadref-bench-"); err == nil {
			b.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return b.TempDir()
}

// resendWorkload is the traffic of agents that resend their conversation history: conv
// conversations in turn, each call sending the whole history grown by one message (about 600
// bytes), a conversation restarting after turns calls. value returns the i-th call's value.
type resendWorkload struct {
	conv, turns int
	msgs        [][]string
}

func newResendWorkload(conv, turns int) *resendWorkload {
	return &resendWorkload{conv: conv, turns: turns, msgs: make([][]string, conv)}
}

func (w *resendWorkload) value(i int) []byte {
	c := i % w.conv
	round := i / w.conv
	if round%w.turns == 0 {
		w.msgs[c] = w.msgs[c][:0]
	}
	role := "user"
	if round%2 == 1 {
		role = "assistant"
	}
	w.msgs[c] = append(w.msgs[c], msg(role, fmt.Sprintf("conversation %d call %d: %s", c, i, strings.Repeat("some agent text ", 36))))
	return []byte("[" + strings.Join(w.msgs[c], ",") + "]")
}

// prefillIndex indexes n objects (random digests in one pack) in the store's index, as a long
// running collector's index holds, so that lookups meet a B-tree of realistic depth.
func prefillIndex(b *testing.B, s *Store, n int) {
	ctx := context.Background()
	added := make([]packfile.EntryAt, n)
	for i := range added {
		added[i] = packfile.EntryAt{Entry: packfile.Entry{Object: ref.Object{Sum: sha256.Sum256([]byte(fmt.Sprint("prefill", i)))}, Off: packfile.RecordHeaderSize, ZLen: 1}, Pack: "18c0000000000000-000000000000"}
	}
	if _, _, err := s.idx.Insert(ctx, added, s.now); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's CPU time so far (user and system, every goroutine: the background
// indexer and uploader included), which a loaded machine does not inflate as it does wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPutResend measures Put+Commit of a resend-history workload (32 conversations, each
// call one batch holding the whole history grown by one message, split=true) in the pack layout
// on an index already holding 100,000 objects, against a baseline in the same run: SHA-256 and
// zstd (the store's level) of the same bytes, the least a content-addressed compressed store
// does. Reported: ns/object and cpu-ns/object (wall and process CPU time per object; objects =
// parts of the split values, written or deduplicated; the store's CPU includes the index work
// done in the background until the store is closed) and,
// with -benchmem, allocations per call; "store" also reports written/call and hits/call.
//
//	go test ./internal/payloadref/ -run '^$' -bench PutResend -benchmem
func BenchmarkPutResend(b *testing.B) {
	const conv, turns, prefill = 32, 40, 100000
	ctx := context.Background()
	b.Run("store", func(b *testing.B) {
		dir := benchDir(b)
		url := "file://" + dir + "/bucket?create_dir=true&metadata=skip"
		s, err := NewStore(ctx, url, StoreOptions{Dir: dir + "/data"})
		if err != nil {
			b.Fatal(err)
		}
		prefillIndex(b, s, prefill)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		// Reopened: what a collector starting on an existing index does.
		if s, err = NewStore(ctx, url, StoreOptions{Dir: dir + "/data"}); err != nil {
			b.Fatal(err)
		}
		w := newResendWorkload(conv, turns)
		values := make([][]byte, b.N)
		for i := range values {
			values[i] = w.value(i)
		}
		var objects, written, hits int
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			bt := s.NewBatch()
			res, err := bt.Put(ctx, values[i], true)
			if err != nil {
				b.Fatal(err)
			}
			if err := bt.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			objects += res.Objects
			written += res.Written
			hits += res.DedupHits
		}
		b.StopTimer()
		if err := s.Close(); err != nil { // what the background indexer still had to do counts
			b.Fatal(err)
		}
		cpu := cpuTime() - cpu0
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(objects, 1)), "ns/object")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(objects, 1)), "cpu-ns/object")
		b.ReportMetric(float64(written)/float64(b.N), "written/call")
		b.ReportMetric(float64(hits)/float64(b.N), "hits/call")
	})
	b.Run("baseline-sha256+zstd", func(b *testing.B) {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true))
		if err != nil {
			b.Fatal(err)
		}
		w := newResendWorkload(conv, turns)
		values := make([][]byte, b.N)
		for i := range values {
			values[i] = w.value(i)
		}
		// The same object count as the store's: the values split the same way.
		objects := 0
		for _, v := range values {
			if n := planSplit(v, 256, 64); n != nil {
				objects += n.count()
			} else {
				objects++
			}
		}
		var sink byte
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			sum := sha256.Sum256(values[i])
			z := enc.EncodeAll(values[i], nil)
			sink ^= sum[0] ^ z[0]
		}
		b.StopTimer()
		cpu := cpuTime() - cpu0
		_ = sink
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(objects, 1)), "ns/object")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(objects, 1)), "cpu-ns/object")
	})
}

// count is how many objects the plan stores (itself and its referenced descendants).
func (n *node) count() int {
	c := 1
	for i := range n.children {
		if n.children[i].isRef {
			c += n.children[i].count()
		}
	}
	return c
}
