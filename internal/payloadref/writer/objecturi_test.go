// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"testing"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// TestStoreURIMatchesObjectURI: the URIs a Store builds from its bucket URL parsed once are
// ObjectURI's, byte for byte (prefix applied, writer-only parameters dropped, other query kept).
func TestStoreURIMatchesObjectURI(t *testing.T) {
	dir := t.TempDir()
	for _, bucketURL := range []string{
		"file://" + dir + "?create_dir=true&metadata=skip",
		"file://" + dir + "/sub?create_dir=true&prefix=runagain/&no_tmp_dir=true",
		"mem://objecturi-test",
	} {
		s := newStore(t, bucketURL, StoreOptions{})
		for _, key := range []string{ref.ValueKey([32]byte{1}), ref.ManifestKey([32]byte{2}), ref.PackKey("0a1b"), ""} {
			want, err := ref.ObjectURI(bucketURL, key)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.URI(s.prefix + key); got != want {
				t.Fatalf("%s key %q: Store.URI %q, ObjectURI %q", bucketURL, key, got, want)
			}
		}
	}
}

// BenchmarkObjectURI: a Store's URI (bucket URL parsed once, in NewStore) against ObjectURI on
// the same key (the bucket URL parsed per call, what Store.URI did before), same run:
//
//	go test ./internal/payloadref/ -run '^$' -bench ObjectURI -benchmem
func BenchmarkObjectURI(b *testing.B) {
	bucketURL := "file://" + b.TempDir() + "?create_dir=true&metadata=skip&prefix=runagain/"
	s, err := NewStore(context.Background(), bucketURL, StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key := ref.PackKey("0a1b2c3d4e5f60718293a4b5c6d7e8f9")
	b.Run("parse-per-call", func(b *testing.B) {
		for b.Loop() {
			_, _ = ref.ObjectURI(bucketURL, key)
		}
	})
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			_ = s.URI(s.prefix + key)
		}
	})
}
