// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/collect"
)

// TestStaleRetryReadable: a split value whose children are dedup hits in an older pack, Put while
// a Collect (run by another Store on the same data directory, as the CLI's erasure or the storage
// extension's retention sweep do) deletes that pack: every value whose Put and Commit finally
// succeeded (after ErrStale, Put again in a new Batch as the processor does) reads back
// byte-identical through a Resolver at once, after the indexer ran and the packs were uploaded,
// and after the data directory was reopened, and a Put of the same value after the reopen too.
//
// The root manifest the first attempt appended (pending: not yet indexed) names the collected
// children by pack: a retry that found it pending, or indexed, and took it for stored returned a
// reference to a value that cannot be read, and so did a concurrent Batch that found it pending
// and committed first.
func TestStaleRetryReadable(t *testing.T) {
	type step int
	const (
		ownerOnly      step = iota // the owner's Commit gets ErrStale, its retry must write anew
		otherFirst                 // another Batch hits the pending manifest and commits first
		indexedBetween             // the indexer runs between the Put and the Collect
	)
	for _, shape := range []string{"children", "prefix"} {
		for _, st := range []step{ownerOnly, otherFirst, indexedBetween} {
			name := shape + "/" + [...]string{"owner-retries", "other-batch-commits-first", "indexer-runs-before-commit"}[st]
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				url, _ := fileURL(t)
				dir := t.TempDir()
				clock := newTestClock()
				s, err := NewStore(ctx, url, StoreOptions{Dir: dir, Now: clock.Now, PackMaxAge: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				closed := false
				defer func() {
					if !closed {
						_ = s.Close()
					}
				}()
				collector := newPackStore(t, url, dir, StoreOptions{CollectOnly: true, Now: clock.Now})

				// The older value: its elements (objects of their own) and root manifest go to pack P1.
				old := conversation("STALE-"+shape, 4)
				if _, err := s.Put(ctx, old, true); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				// The new value shares every element of the old one: "prefix" extends it (its
				// manifest names the old root manifest, see planDelta), "children" puts a new
				// element first (its manifest names each old element).
				extra := msg("user", "STALE new message "+strings.Repeat("fresh text ", 40))
				var v []byte
				if shape == "prefix" {
					v = append(append(bytes.Clone(old[:len(old)-1]), ','), extra+"]"...)
				} else {
					v = append([]byte("["+extra+","), old[1:]...)
				}
				clock.advance(time.Hour)

				b := s.NewBatch()
				res, err := b.Put(ctx, v, true)
				if err != nil || !res.Split || res.DedupHits == 0 || res.Written == 0 {
					t.Fatalf("put: %+v %v, want a split value with dedup hits and a new manifest", res, err)
				}
				var other *Batch
				var otherRes PutResult
				if st == otherFirst {
					other = s.NewBatch()
					if otherRes, err = other.Put(ctx, v, true); err != nil || otherRes.DedupHits != 1 {
						t.Fatalf("other put: %+v %v, want a hit on the pending manifest", otherRes, err)
					}
				}
				if st == indexedBetween {
					if err := s.ix.flush(ctx, s.pw); err != nil {
						t.Fatal(err)
					}
				}
				clock.advance(time.Second)
				cst, err := collector.Collect(ctx, liveOf(), collect.Options{})
				// Once the indexer's flush wrote the new manifest to the staged file, it is one
				// of Collect's roots (writers deduplicate against staged manifests): the old pack
				// stays for it, and the Commit finds nothing stale.
				if wantDeleted := st != indexedBetween; err != nil || (cst.PacksDeleted == 1) != wantDeleted || !wantDeleted && cst.KeptChildren == 0 {
					t.Fatalf("collect: %+v %v, want the old pack deleted: %v", cst, err, wantDeleted)
				}
				clock.advance(time.Second)

				// Commit, and on ErrStale Put again in a new Batch (as Store.Put and the
				// processor do): the reference returned by the attempt that committed.
				commit := func(b *Batch, res PutResult) string {
					t.Helper()
					err := b.Commit(ctx)
					for attempt := 0; errors.Is(err, ErrStale) && attempt < 3; attempt++ {
						b = s.NewBatch()
						if res, err = b.Put(ctx, v, true); err != nil {
							t.Fatal(err)
						}
						err = b.Commit(ctx)
					}
					if err != nil {
						t.Fatalf("commit: %v", err)
					}
					return res.URI
				}
				var acked []string
				if other != nil {
					acked = append(acked, commit(other, otherRes))
				}
				acked = append(acked, commit(b, res))

				check := func(when string) {
					t.Helper()
					r := newResolver(t, payloadref.WithStagingDir(s.staging))
					for _, u := range acked {
						got, err := r.Fetch(ctx, u)
						if err != nil || !bytes.Equal(got, v) {
							t.Fatalf("%s: acknowledged %s: %v (%d bytes, want %d)", when, u, err, len(got), len(v))
						}
					}
				}
				check("at once")
				if err := s.Flush(ctx); err != nil { // indexed and uploaded
					t.Fatal(err)
				}
				check("after the upload")

				// A Put of the same value now (found through the index) reads back too.
				again, err := s.Put(ctx, v, true)
				if err != nil {
					t.Fatal(err)
				}
				acked = append(acked, again.URI)
				check("after another put")

				closed = true
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s, err = NewStore(ctx, url, StoreOptions{Dir: dir, Now: clock.Now, PackMaxAge: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				closed = false
				check("after reopening")
				again, err = s.Put(ctx, v, true)
				if err != nil {
					t.Fatal(err)
				}
				acked = append(acked, again.URI)
				check("after a put on the reopened store")
			})
		}
	}
}
