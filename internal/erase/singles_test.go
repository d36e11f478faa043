// SPDX-License-Identifier: Apache-2.0

package erase

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// TestSingleObjectsUnreadableLiveManifest: in a bucket of single objects swept without a digest
// index (NewSweeper with no dir), a live reference to a manifest that cannot be decoded
// stops the sweep with an error naming it, and deletes nothing (the objects it may reach stay).
func TestSingleObjectsUnreadableLiveManifest(t *testing.T) {
	ctx := context.Background()
	bucketURL := "file://" + t.TempDir() + "?create_dir=true&metadata=skip"
	b, closeFn, err := ref.OpenBucket(ctx, bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn() //nolint:errcheck
	manifestKey := ref.ManifestKey(sha256.Sum256([]byte("manifest")))
	orphanKey := ref.ValueKey(sha256.Sum256([]byte("child")))
	for _, k := range []string{manifestKey, orphanKey} {
		if err := b.WriteAll(ctx, k, []byte("not a zstd frame"), nil); err != nil {
			t.Fatal(err)
		}
	}
	uri, err := ref.ObjectURI(bucketURL, manifestKey)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSweeper(bucketURL, "", 0, func() time.Time { return time.Now().Add(time.Hour) })
	live := func(yield func(string) bool) error { yield(uri); return nil }
	_, err = s.Sweep(ctx, live, SweepOptions{})
	if err == nil || !strings.Contains(err.Error(), manifestKey) {
		t.Fatalf("sweep over an unreadable live manifest: err %v, want one naming %s", err, manifestKey)
	}
	for _, k := range []string{manifestKey, orphanKey} {
		if ok, err := b.Exists(ctx, k); err != nil || !ok {
			t.Errorf("%s deleted by a sweep that failed (exists %v, %v)", k, ok, err)
		}
	}
}
