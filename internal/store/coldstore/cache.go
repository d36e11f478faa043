// SPDX-License-Identifier: Apache-2.0

package coldstore

import (
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"gocloud.dev/blob"

	"github.com/runagain/runagain/internal/store"
)

// maxCachedPartials bounds the partial records objectCache keeps decoded, about 300 bytes each
// (strings of ids, models and trace ids): some 60 MB. A bucket holding more is read, beyond the
// most recently used objects, from the bucket on each listing, as before the cache.
const maxCachedPartials = 200_000

// objectCache keeps the decoded partials of the objects read (they are immutable: a retried or
// rewritten batch changes its object's size, modification time or MD5, and a deleted one leaves
// the listing), bounded by maxCachedPartials through an LRU over objects, and the merged
// sessions of the last listing read (by the listing's fingerprint). Without it every listing
// of the cold tier, each page of store.EachRun and each UI request, read and decoded every
// object of the bucket (issue 35: `sessions --since 2h` 88 -> 504 ms between 10^4 and 10^5 runs).
type objectCache struct {
	mu       sync.Mutex
	objects  *lru.Cache[string, cachedObject]
	rows     int
	max      int
	lastFP   string
	lastSess []store.Session
	decoded  atomic.Int64 // objects read and decoded from the bucket (tests)
}

type cachedObject struct {
	validator string
	rows      []store.SessionPartial
}

func newObjectCache(maxRows int) *objectCache {
	c := &objectCache{max: maxRows}
	c.objects, _ = lru.NewWithEvict[string, cachedObject](1<<20, func(_ string, o cachedObject) { c.rows -= len(o.rows) })
	return c
}

// validatorOf is what tells an object's versions apart in a listing.
func validatorOf(obj *blob.ListObject) string {
	return fmt.Sprintf("%d/%d/%s", obj.Size, obj.ModTime.UnixNano(), hex.EncodeToString(obj.MD5))
}

func (c *objectCache) get(key, validator string) ([]store.SessionPartial, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects.Get(key)
	if !ok || o.validator != validator {
		return nil, false
	}
	return o.rows, true
}

func (c *objectCache) put(key, validator string, rows []store.SessionPartial) {
	if len(rows) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects.Remove(key) // its older version, if any (the eviction callback uncounts it)
	c.objects.Add(key, cachedObject{validator: validator, rows: rows})
	c.rows += len(rows)
	for c.rows > c.max {
		c.objects.RemoveOldest()
	}
}

// merged returns a copy of the sessions merged for the listing fp, if they are the last kept.
func (c *objectCache) merged(fp string) ([]store.Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastSess == nil || c.lastFP != fp {
		return nil, false
	}
	return slices.Clone(c.lastSess), true
}

func (c *objectCache) keepMerged(fp string, ss []store.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastFP, c.lastSess = fp, ss
}
