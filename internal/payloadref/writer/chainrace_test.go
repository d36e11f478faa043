// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeltaChainOfAnotherPlan: when a value planned for one stream is stored first by another
// Put (the same value, another stream, at the same time) as a chain of maxChain prefix parts,
// the stream's next values do not count their chain from zero on top of it: every value still
// resolves (a chain of 2*maxChain root manifests nests past maxDepth: "nested deeper than 16").
func TestDeltaChainOfAnotherPlan(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	val := func(n int) []byte {
		var msgs []string
		for i := 0; i < n; i++ {
			msgs = append(msgs, msg("user", fmt.Sprintf("RACE call %d %s", i, strings.Repeat("resent text ", 30))))
		}
		return []byte("[" + strings.Join(msgs, ",") + "]")
	}
	put := func(stream string, v []byte) string {
		t.Helper()
		b := s.NewBatch()
		res, err := b.PutStream(ctx, v, true, stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return res.URI
	}
	for n := 2; n < 2+maxChain; n++ {
		put("s1", val(n)) // planned whole, then chains 1..maxChain-1
	}
	// s2 plans val(2+maxChain) whole; s1 stores it first as the maxChain-th of its chain.
	raced := val(2 + maxChain)
	testHookPlanned = func(data []byte) {
		if bytes.Equal(data, raced) {
			testHookPlanned = nil
			put("s1", raced)
		}
	}
	t.Cleanup(func() { testHookPlanned = nil })
	put("s2", raced)
	if testHookPlanned != nil {
		t.Fatal("the hook did not run")
	}
	uris := map[int]string{}
	for n := 3 + maxChain; n <= 2+2*maxChain; n++ {
		uris[n] = put("s2", val(n))
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := newResolver(t)
	for n, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, val(n)) {
			t.Fatalf("value of %d messages: %v", n, err)
		}
	}
}
