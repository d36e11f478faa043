// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// writeRawManifest stores doc, zstd-compressed, as the manifest of digest sum in the
// single-object layout under dir (the bucket's root), bypassing every check of the writer.
func writeRawManifest(t testing.TB, dir string, sum [32]byte, doc []byte) {
	t.Helper()
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	p := filepath.Join(dir, filepath.FromSlash(ref.ManifestKey(sum)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, enc.EncodeAll(doc, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzResolvePrefixManifest: a corrupt manifest document (prefix parts naming itself: a cycle;
// sizes out of range; parts that do not add up) read by the Resolver returns an error or the
// value whose digest it is stored under, never panics nor loops: the seeds are the cyclic and
// negative-size prefix parts a bucket may hold after corruption. The manifest is stored under
// digest self; refs may name self (the cycle) or a stored value "abcdef".
func FuzzResolvePrefixManifest(f *testing.F) {
	self := sha256.Sum256([]byte("self"))
	value := []byte("abcdef")
	vsum := sha256.Sum256(value)
	selfHex, vHex := hex.EncodeToString(self[:]), hex.EncodeToString(vsum[:])
	for _, doc := range []string{
		// The cycle: a prefix part naming the manifest itself.
		`{"v":2,"size":3,"parts":[{"ref":"` + selfHex + `","n":3,"m":true,"pre":true}]}`,
		// A negative prefix size made up by a literal (the parts add up).
		`{"v":2,"size":2,"parts":[{"ref":"` + vHex + `","n":-1,"pre":true},{"lit":"YWJj"}]}`,
		// A prefix longer than its object.
		`{"v":2,"size":9,"parts":[{"ref":"` + vHex + `","n":9,"pre":true}]}`,
		// A huge size.
		`{"v":2,"size":9000000000000,"parts":[{"ref":"` + vHex + `","n":9000000000000,"pre":true}]}`,
		// A negative whole part.
		`{"v":1,"size":0,"parts":[{"ref":"` + vHex + `","n":-6},{"lit":"YWJjZGVm"}]}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "rvprefix") // t.TempDir's name holds '#' under fuzzing: not a URL path
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		url := "file://" + dir + "?create_dir=true&metadata=skip"
		s := newStore(t, url, StoreOptions{})
		if _, err := s.Put(ctx, value, false); err != nil {
			t.Fatal(err)
		}
		writeRawManifest(t, dir, self, doc)
		uri, err := ref.ObjectURI(url, ref.ManifestKey(self))
		if err != nil {
			t.Fatal(err)
		}
		got, err := newResolver(t).Fetch(ctx, uri)
		if err == nil && sha256.Sum256(got) != self {
			t.Fatalf("resolved %q, which is not the value of its digest", got)
		}
	})
}
