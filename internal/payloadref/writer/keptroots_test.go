// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
)

// TestKeptManifestKeepsItsChildren: a split value no live reference names, deduplicated (a hit on
// its root manifest only) while an erasure's Collect (Grace 0) runs, reads back whole: the kept
// manifest is a root of the mark, so the objects it names stay. Before, the manifest was kept
// (KeptRecent) and its elements were dropped from the pack around it.
func TestKeptManifestKeepsItsChildren(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	v := conversation("KEPT-ROOT", 6)
	first, err := s.Put(ctx, v, true)
	if err != nil || !first.Split || first.Objects < 3 {
		t.Fatalf("put: %+v %v, want a split value", first, err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	var second PutResult
	live := func(func(string) bool) error {
		second, err = s.Put(ctx, v, true) // after the mark began: touches the manifest only
		return err
	}
	st, err := s.Collect(ctx, live, collect.Options{Erase: true})
	if err != nil {
		t.Fatal(err)
	}
	if second.DedupHits != 1 || second.Objects != 1 {
		t.Fatalf("second put %+v: want one hit on the root manifest", second)
	}
	if st.ObjectsDeleted != 0 || st.KeptRecent != 1 || st.KeptChildren != first.Objects-1 {
		t.Fatalf("collect %+v: want the manifest kept and its %d children with it", st, first.Objects-1)
	}
	if got, err := newResolver(t).Fetch(ctx, second.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("value acknowledged during the erasure: %v", err)
	}
}
