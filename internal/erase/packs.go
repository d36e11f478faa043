// SPDX-License-Identifier: Apache-2.0

package erase

import (
	"context"
	"fmt"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/writer"
	"github.com/runagain/runagain/internal/store"
)

// Packs sweeps a payload bucket in payloadref's pack layout (and the single objects written
// before it) through writer.(*Store).Collect (internal/payloadref/collect), with the digest
// index of the data directory Dir (runagain_storage payloads::dir): packs holding nothing live
// are deleted, mostly dead ones rewritten, and with SweepOptions.Erase every pack holding a dead
// object is rewritten. It opens the index CollectOnly, so it runs beside the collector that
// writes the packs; packs the collector has not uploaded yet are not swept: an erasure first asks
// the collector to seal and upload its open pack now and waits for the upload
// (writer.SealStaged, at most sealWait).
//
// Without Dir (a bucket in the single-object layout, sha256/<hex>.zst and .manifest.zst) there
// is no index and no staging area: Collect then sweeps the single objects only, by their
// modification time against Grace, and leaves any pack untouched (it cannot know when their
// objects were last referenced).
type Packs struct {
	URL string // payloads::url
	Dir string // payloads::dir
	// Grace keeps unreferenced objects referenced less than this long before the sweep began
	// (values on their way to the hot tier); the objects of erased rows ignore it.
	Grace time.Duration
	Now   func() time.Time // default time.Now
}

// sealWait bounds how long an erasure waits for the collector to upload its staged packs.
const sealWait = 30 * time.Second

// Where implements PayloadSweeper.
func (p *Packs) Where() string { return p.URL }

// Sweep implements PayloadSweeper.
func (p *Packs) Sweep(ctx context.Context, live store.LiveRefs, o SweepOptions) (PayloadStats, error) {
	var left int
	s, err := writer.NewStore(ctx, p.URL, writer.StoreOptions{Dir: p.Dir, CollectOnly: true, Now: p.Now})
	if err != nil {
		return PayloadStats{}, err
	}
	defer func() { _ = s.Close() }()
	if len(o.Erased) > 0 && p.Dir != "" {
		// The collector's open pack may hold erased objects: have it sealed and uploaded now
		// (bounded: with the bucket down they stay staged, and a later pass removes them).
		sctx, cancel := context.WithTimeout(ctx, sealWait)
		left, err = writer.SealStaged(sctx, p.Dir)
		cancel()
		if err != nil && left == 0 {
			return PayloadStats{}, fmt.Errorf("sealing the collector's staged packs: %w", err)
		}
	}
	erased := func(yield func(string) bool) error {
		for _, u := range o.Erased {
			if !yield(u) {
				break
			}
		}
		return nil
	}
	// Retention is a deletion promise as much as an erasure: every pack holding an expired
	// object is rewritten (not only mostly dead ones), so no byte of an expired run remains.
	// Objects die in batches (runs expire in ingestion order), so most such packs are wholly
	// dead and deleted rather than rewritten.
	st, err := s.Collect(ctx, collect.LiveRefs(live), collect.Options{Erase: true, Grace: p.Grace, Erased: erased})
	return PayloadStats{
		ObjectsDeleted: st.ObjectsDeleted,
		BytesFreed:     st.BytesFreed,
		PacksDeleted:   st.PacksDeleted,
		PacksRewritten: st.PacksRewritten,
		KeptShared:     st.KeptShared,
		KeptRecent:     st.KeptRecent,
		StillStaged:    left,
	}, err
}

var _ PayloadSweeper = (*Packs)(nil)

// NewSweeper returns the sweeper of the payload bucket at url, payloadref Collect (Packs) with
// the digest index of dir (runagain_storage payloads::dir; "" for a bucket of single objects):
// grace spares unreferenced objects referenced or written less than grace before the sweep (now
// is the clock; nil for time.Now).
func NewSweeper(url, dir string, grace time.Duration, now func() time.Time) PayloadSweeper {
	return &Packs{URL: url, Dir: dir, Grace: grace, Now: now}
}
