// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
)

// TestDeltaManifestChain: a 40-call resent conversation stored through PutStream writes root
// manifests naming the previous call's by a prefix part (version 2), at most maxChain in a row
// before one planned whole; every value resolves from the bucket alone after upload; Collect
// keeping only the last call's reference keeps every manifest its chain goes through (it still
// resolves), and erasing it leaves none of the conversation's bytes.
func TestDeltaManifestChain(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	clock := time.Now()
	var clockMu sync.Mutex
	now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	s := newPackStore(t, url, t.TempDir(), StoreOptions{Now: now, PackMaxAge: time.Hour})
	var msgs []string
	var uris []string
	var values [][]byte
	whole, run, longest := 0, 0, 0
	for i := 0; i < 40; i++ {
		msgs = append(msgs, msg("user", fmt.Sprintf("DELTA-CONV call %d %s", i, strings.Repeat("resent text ", 30))))
		v := []byte("[" + strings.Join(msgs, ",") + "]")
		b := s.NewBatch()
		res, err := b.PutStream(ctx, v, true, "conv\x00gen_ai.input.messages")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		uris, values = append(uris, res.URI), append(values, v)
		if s.plans.cache.Len() == 0 {
			continue // one message: not split
		}
		if m := s.plans.cache.Values()[0]; m.chain == 0 {
			whole++
			run = 0
		} else if run++; run > longest {
			longest = run
		}
	}
	if longest != maxChain || whole < 39/(maxChain+1) || whole > 39/(maxChain+1)+1 {
		t.Fatalf("%d values planned whole, longest chain %d; want one in %d and chains of %d", whole, longest, maxChain+1, maxChain)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := newResolver(t)
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("value %d from the bucket: %v", i, err)
		}
	}
	raw := decodedBucket(t, url)
	if !bytes.Contains(raw, []byte(`"pre":true`)) || !bytes.Contains(raw, []byte(`{"v":2,`)) {
		t.Fatal("no prefix part was written")
	}
	clockMu.Lock()
	clock = clock.Add(time.Minute)
	clockMu.Unlock()
	last := uris[len(uris)-1]
	if _, err := s.Collect(ctx, liveOf(last), collect.Options{Erase: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := newResolver(t).Fetch(ctx, last); err != nil || !bytes.Equal(got, values[len(values)-1]) {
		t.Fatalf("the live value after collect: %v", err)
	}
	if _, err := s.Collect(ctx, liveOf(), collect.Options{Erase: true}); err != nil {
		t.Fatal(err)
	}
	if raw := decodedBucket(t, url); bytes.Contains(raw, []byte("DELTA-CONV")) {
		t.Fatal("the erased conversation's bytes remain")
	}
}

// TestMemoHeadExtendsInPlace: the memo of a value extending its stream's previous value appends
// only the new bytes to the previous memo's array (no copy of the whole value), once: a second
// value extending the same memo gets its own copy, and the previous memo's bytes never change.
func TestMemoHeadExtendsInPlace(t *testing.T) {
	v1 := []byte(`["aaaa","bbbb"]`)
	prev := &planMemo{head: memoHead(nil, 0, v1)}
	if string(prev.head) != `["aaaa","bbbb"` || cap(prev.head) <= len(prev.head) {
		t.Fatalf("head %q cap %d", prev.head, cap(prev.head))
	}
	v2 := []byte(`["aaaa","bbbb",1]`) // within the headroom of the first copy
	v3 := []byte(`["aaaa","bbbb","d"]`)
	h2 := memoHead(prev, len(prev.head), v2)
	h3 := memoHead(prev, len(prev.head), v3)
	if string(h2) != `["aaaa","bbbb",1` || string(h3) != `["aaaa","bbbb","d"` || string(prev.head) != `["aaaa","bbbb"` {
		t.Fatalf("heads %q %q, previous %q", h2, h3, prev.head)
	}
	if &h2[0] != &prev.head[0] {
		t.Fatal("the first extension copied the whole value")
	}
	if &h3[0] == &prev.head[0] {
		t.Fatal("a second extension of the same memo wrote into its array")
	}
}

// TestPutStreamConcurrent: values of one stream stored from several goroutines at once (two
// batches of the same conversation, say) all resolve (run with -race: memos are shared).
func TestPutStreamConcurrent(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	var msgs []string
	var values [][]byte
	for i := 0; i < 24; i++ {
		msgs = append(msgs, msg("user", fmt.Sprintf("concurrent call %d %s", i, strings.Repeat("text ", 80))))
		values = append(values, []byte("["+strings.Join(msgs, ",")+"]"))
	}
	uris := make([]string, len(values))
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(values); i += 3 {
				b := s.NewBatch()
				res, err := b.PutStream(ctx, values[i], true, "conv")
				if err == nil {
					err = b.Commit(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				uris[i] = res.URI
			}
		}()
	}
	wg.Wait()
	r := newResolver(t)
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("value %d: %v", i, err)
		}
	}
}
