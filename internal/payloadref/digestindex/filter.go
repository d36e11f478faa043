// SPDX-License-Identifier: Apache-2.0

package digestindex

import (
	"context"
	"fmt"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Digest filter sizing: the Bloom filter in front of a writer's digest index holds every object
// the index lists, with room for filterHeadroom times the rows it had when built (at least
// FilterMinEntries), at filterFalsePositive false positives; once more objects were added than
// it was sized for, it is rebuilt from the index at twice the count. At 1% a filter costs about
// 9.6 bits (1.2 bytes) per entry: 1.2 MB for the minimum of 1,000,000 entries.
const (
	filterHeadroom      = 2
	filterFalsePositive = 0.01
)

// FilterMinEntries is the smallest capacity of a filter (a variable for tests).
var FilterMinEntries uint = 1 << 20

// filter is a negative cache of the digest index: a new object (the filter answers "absent")
// costs no SQLite lookup. Every object the index lists was added to the filter (filled from the
// objects table when the writer opens, then by the indexer as it inserts rows; only that writer
// inserts rows), so "absent" is always right; "present" may be wrong (a false positive, or an
// object Collect removed since) and is checked against the index. A store without a filter
// (CollectOnly) always checks the index.
type filter struct {
	fmu   sync.RWMutex
	bf    *bloom.BloomFilter // nil: no filter
	capN  uint               // entries it was sized for
	added uint               // entries added since built
}

// filterKey is an object's key in the filter: its digest and kind.
func filterKey(k ref.Object) (b [33]byte) {
	copy(b[:32], k.Sum[:])
	if k.Manifest {
		b[32] = 1
	}
	return b
}

// MayHave tells whether the index may list k (true without a filter).
func (f *filter) MayHave(k ref.Object) bool {
	b := filterKey(k)
	f.fmu.RLock()
	defer f.fmu.RUnlock()
	return f.bf == nil || f.bf.Test(b[:])
}

// AddFiltered adds keys to the filter and tells whether it is now past its capacity.
func (f *filter) AddFiltered(keys []packfile.EntryAt) (full bool) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if f.bf == nil {
		return false
	}
	for _, e := range keys {
		b := filterKey(e.Object)
		f.bf.Add(b[:])
	}
	f.added += uint(len(keys))
	return f.added > f.capN
}

// FilterStats returns the entries the filter is sized for and its size in bytes (0, 0 without).
func (f *filter) FilterStats() (capacity uint, bytes int64) {
	f.fmu.RLock()
	defer f.fmu.RUnlock()
	if f.bf == nil {
		return 0, 0
	}
	return f.capN, int64(f.bf.Cap() / 8)
}

// BuildFilter (re)builds the filter from every object the index lists, sized for filterHeadroom
// times their count (at least FilterMinEntries). Callers make sure no row is inserted meanwhile
// (at open, before the indexer starts; later, from the indexer itself).
func (x *Index) BuildFilter(ctx context.Context) error {
	count, err := x.ObjectCount(ctx)
	if err != nil {
		return err
	}
	n := max(uint(count)*filterHeadroom, FilterMinEntries)
	bf := bloom.NewWithEstimates(n, filterFalsePositive)
	rows, err := x.db.QueryContext(ctx, `SELECT digest, manifest FROM objects`)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	var added uint
	for rows.Next() {
		var d []byte
		var k ref.Object
		if err := rows.Scan(&d, &k.Manifest); err != nil {
			return err
		}
		if len(d) != len(k.Sum) {
			return fmt.Errorf("payload index: an objects row has a %d-byte digest, want %d", len(d), len(k.Sum))
		}
		copy(k.Sum[:], d)
		key := filterKey(k)
		bf.Add(key[:])
		added++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	x.fmu.Lock()
	x.bf, x.capN, x.added = bf, n, added
	x.fmu.Unlock()
	x.built.Store(int64(added))
	return nil
}
