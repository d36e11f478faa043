// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref"
)

// planChain plans each value of a stream in turn with the memo of the previous one (as Put
// does) and checks the tree and the digest against planning it from scratch; it returns how
// many values reused a memo.
func planChain(t *testing.T, values [][]byte, chunkMin, fanout int) int {
	t.Helper()
	memos := newPlanMemos()
	reused := 0
	for i, v := range values {
		key := memos.key("stream", v)
		prev, common := memos.match(key, v)
		if prev != nil {
			reused++
		}
		next := &planMemo{}
		sum := hashValue(v, prev, common, next)
		if sum != sha256.Sum256(v) {
			t.Fatalf("value %d: digest %x, want %x", i, sum, sha256.Sum256(v))
		}
		got := planSplitMemo(v, sum, chunkMin, fanout, prev, common, next)
		want := planSplitSum(v, sum, chunkMin, fanout)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("value %d (%q...): plan with the memo differs from the plan from scratch", i, v[:min(len(v), 40)])
		}
		if got != nil && v[0] == '[' {
			next.head = memoHead(prev, common, v)
			memos.keep(key, next)
		}
	}
	return reused
}

// TestPlanSplitMemo: a stream's values planned with the previous value's memo give the tree and
// digest planned from scratch: a resent conversation growing one message a call (grouped into
// sub-manifests past the fanout), pretty-printed arrays, numbers and literals at the shared
// boundary (`[.., 12` then `[.., 123]`), the same value twice, a value that edits its history
// (no reuse), a tail that is not JSON, and objects (never memoized).
func TestPlanSplitMemo(t *testing.T) {
	var conv [][]byte
	var msgs []string
	for i := 0; i < 120; i++ {
		msgs = append(msgs, msg("user", fmt.Sprintf("turn %d %s", i, strings.Repeat("words ", 50+i%7))))
		conv = append(conv, []byte("["+strings.Join(msgs, ",")+"]"))
	}
	if n := planChain(t, conv, 256, 8); n < 100 {
		t.Fatalf("memo reused for %d of %d values", n, len(conv))
	}
	if n := planChain(t, conv, 256, 64); n < 100 {
		t.Fatalf("memo reused for %d of %d values (fanout 64)", n, len(conv))
	}
	// A history whose third message changed (re-sealed, say) after the previous call: nothing
	// is a shared prefix, later elements still match the memo's at their index.
	edited := slices.Clone(msgs[:60])
	edited[2] = msg("user", "edited "+strings.Repeat("words ", 60))
	if n := planChain(t, [][]byte{conv[58], []byte("[" + strings.Join(edited, ",") + "]")}, 256, 64); n != 1 {
		t.Fatalf("memo found for %d of 2 values", n)
	}
	big := strings.Repeat("x", 300)
	edge := [][]byte{
		[]byte(`["` + big + `", "` + big + `", 12]`),
		[]byte(`["` + big + `", "` + big + `", 123]`),
		[]byte(`["` + big + `", "` + big + `", 123, true]`),
		[]byte(`["` + big + `", "` + big + `", 123, true]`),
		[]byte(`["` + big + `", "` + big + `", 123, true, "` + big + `"] `),
		[]byte("[\n  \"" + big + "\",\n  \"" + big + "\"\n]"),
		[]byte("[\n  \"" + big + "\",\n  \"" + big + "\"\n,\"" + big + "\"]"),
		[]byte(`["` + big + `", "` + big + `", "` + big + `" x]`),
		[]byte(`["` + big + `", "` + big + `", "` + big + `"]`),
		[]byte(`["` + big + `", "` + big + `", "` + big + `"],`),
		[]byte(`["` + big + `", "changed", "` + big + `", "` + big + `"]`),
		[]byte(`{"a": ["` + big + `", "` + big + `"]}`),
		[]byte(`{"a": ["` + big + `", "` + big + `", "` + big + `"]}`),
	}
	if n := planChain(t, edge, 256, 64); n < 4 {
		t.Fatalf("memo reused for %d edge values", n)
	}
}

// TestPutStreamResend: a resent conversation stored through PutStream (memos on) gives the
// references of Put without memos, every value resolves, and it writes less than two thirds of
// the bytes (each call's root manifest names the previous call's instead of repeating its parts:
// planDelta; Put without memos writes every call's whole root manifest).
func TestPutStreamResend(t *testing.T) {
	ctx := context.Background()
	run := func(stream bool) ([]PutResult, *Store) {
		url, _ := fileURL(t)
		s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour, Fanout: 8})
		var out []PutResult
		var msgs []string
		for i := 0; i < 40; i++ {
			msgs = append(msgs, msg("assistant", fmt.Sprintf("call %d %s", i, strings.Repeat("resent ", 60))))
			v := []byte("[" + strings.Join(msgs, ",") + "]")
			b := s.NewBatch()
			var res PutResult
			var err error
			if stream {
				res, err = b.PutStream(ctx, v, true, "conv-1\x00gen_ai.input.messages")
			} else {
				s.plans = newPlanMemos() // forget: every value planned whole
				res, err = b.Put(ctx, v, true)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := newResolver(t, payloadref.WithStagingDir(s.staging)).Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, v) {
				t.Fatalf("value %d: %v", i, err)
			}
			res.URI = res.URI[strings.Index(res.URI, "#"):] // pack ids differ between stores
			out = append(out, res)
		}
		return out, s
	}
	with, s := run(true)
	without, _ := run(false)
	uris := func(rs []PutResult) (out []string, written int64) {
		for _, r := range rs {
			out = append(out, r.URI)
			written += r.BytesWritten
		}
		return out, written
	}
	wu, wb := uris(with)
	ou, ob := uris(without)
	if !reflect.DeepEqual(wu, ou) {
		t.Fatalf("PutStream references differ from Put's:\n%v\n%v", wu, ou)
	}
	t.Logf("bytes written: %d with memos, %d without", wb, ob)
	if 3*wb > 2*ob {
		t.Fatalf("PutStream wrote %d bytes, Put %d: want less than two thirds", wb, ob)
	}
	if s.plans.cache.Len() != 1 || s.plans.bytes == 0 {
		t.Fatalf("memos: %d entries, %d bytes", s.plans.cache.Len(), s.plans.bytes)
	}
}

// TestPlanMemosBudget: memos are bounded by planMemoBudget bytes (oldest dropped), values
// above planMemoMaxValue are not kept, and replacing a stream's memo counts only the new one (a
// miscount once dropped every stream's memo at each value).
func TestPlanMemosBudget(t *testing.T) {
	p := newPlanMemos()
	for i := 1; i <= 100; i++ {
		p.keep(7, &planMemo{head: make([]byte, i<<10)})
	}
	if p.bytes != 100<<10 || p.cache.Len() != 1 {
		t.Fatalf("one stream's memo replaced 100 times: %d bytes, %d entries", p.bytes, p.cache.Len())
	}
	p = newPlanMemos()
	p.keep(1, &planMemo{head: make([]byte, planMemoMaxValue)}) // a value of planMemoMaxValue+1 bytes
	if p.cache.Len() != 0 {
		t.Fatal("a value above planMemoMaxValue was kept")
	}
	for i := 0; i < 40; i++ {
		p.keep(uint64(i), &planMemo{head: make([]byte, planMemoMaxValue-1)})
	}
	if got := p.bytes; got > planMemoBudget || got != int64(p.cache.Len())*(planMemoMaxValue-1) {
		t.Fatalf("%d bytes in %d memos, budget %d", got, p.cache.Len(), planMemoBudget)
	}
	if _, ok := p.cache.Peek(39); !ok {
		t.Fatal("the newest memo was dropped")
	}
}
