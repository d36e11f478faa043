// SPDX-License-Identifier: Apache-2.0

package digestindex

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// TestIndexInsertMultiRow: insert writes rows in statements of insertRows rows; every row of a
// batch spanning several statements (and a partial last one) is indexed, an object given twice
// ends in its last pack, and a second insert keeps the later last_ref.
func TestIndexInsertMultiRow(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, filepath.Join(t.TempDir(), IndexFile), "file:///bucket", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Close() }()
	var added []packfile.EntryAt
	for i := 0; i < 2*insertRows+17; i++ {
		k := ref.Object{Sum: sha256.Sum256([]byte(fmt.Sprint("row", i))), Manifest: i%3 == 0}
		added = append(added, packfile.EntryAt{Entry: packfile.Entry{Object: k}, Pack: fmt.Sprintf("18c%013x-000000000001", i%4)})
	}
	dup := added[5]
	dup.Pack = "18c0000000000099-000000000001"
	added = append(added, dup)
	at := time.Unix(1000, 0)
	if _, _, err := x.Insert(ctx, added, func() time.Time { return at }); err != nil {
		t.Fatal(err)
	}
	if n, err := x.ObjectCount(ctx); err != nil || n != int64(len(added)-1) {
		t.Fatalf("%d rows (%v), want %d", n, err, len(added)-1)
	}
	for i, a := range added[:len(added)-1] {
		want := a.Pack
		if i == 5 {
			want = dup.Pack
		}
		if p, err := x.Lookup(ctx, a.Object); err != nil || p != want {
			t.Fatalf("row %d: pack %q (%v), want %q", i, p, err, want)
		}
	}
	if _, _, err := x.Insert(ctx, added[:1], func() time.Time { return at.Add(time.Hour) }); err != nil {
		t.Fatal(err)
	}
	var last int64
	if err := x.db.QueryRowContext(ctx, `SELECT last_ref FROM objects WHERE digest = ?`, added[0].Sum[:]).Scan(&last); err != nil || last != at.Add(time.Hour).UnixNano() {
		t.Fatalf("last_ref after a second insert: %d %v", last, err)
	}
}

// TestIndexOpenedConcurrently: the collector's processor, the storage extension's sweep and the
// CLI may open a new index at the same moment; every opener of the same bucket succeeds (the
// first one records the bucket) and one of another bucket is refused by a CollectOnly opener.
func TestIndexOpenedConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), IndexFile)
	const openers = 8
	errs := make(chan error, openers)
	for range openers {
		go func() {
			x, err := Open(ctx, path, "file:///bucket", true)
			if err == nil {
				err = x.Close()
			}
			errs <- err
		}()
	}
	for range openers {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	if _, err := Open(ctx, path, "file:///other", true); err == nil || !strings.Contains(err.Error(), "indexes bucket file:///bucket") {
		t.Fatalf("opening the index of file:///bucket for file:///other: %v, want a refusal naming both", err)
	}
}
