// SPDX-License-Identifier: Apache-2.0

package erase

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/payloadref/writer"
)

// objectKeys lists the files under the bucket directory, relative to it.
func objectKeys(t *testing.T, dir string) []string {
	t.Helper()
	var keys []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		keys = append(keys, filepath.ToSlash(rel))
		return err
	}))
	return keys
}

// TestSweeperWithoutDirSweepsSingleObjects: without payloads::dir (no digest index) NewSweeper
// still sweeps a bucket of single objects written by payloadref: an erasure deletes the erased
// row's object at once, keeps one a live row shares (KeptShared), a split live value whole
// (its manifest followed) and an unreferenced object within the grace period (KeptRecent); a
// sweep after the grace period deletes that one. It creates nothing in the working directory
// (no staging area to seal).
func TestSweeperWithoutDirSweepsSingleObjects(t *testing.T) {
	ctx := context.Background()
	t.Chdir(t.TempDir())
	blobs := filepath.Join(t.TempDir(), "blobs")
	bucketURL := "file://" + blobs + "?create_dir=true&metadata=skip"
	ps, err := writer.NewStore(ctx, bucketURL, writer.StoreOptions{})
	require.NoError(t, err)
	put := func(v string, split bool) string {
		res, err := ps.Put(ctx, []byte(v), split)
		require.NoError(t, err)
		return res.URI
	}
	var parts []string
	for i := range 4 {
		parts = append(parts, `{"role":"user","content":"`+strings.Repeat(string(rune('a'+i)), 400)+`"}`)
	}
	live := put("["+strings.Join(parts, ",")+"]", true)
	shared := put("the same content erased in one session and live in another", false)
	erased := put("only the erased session's value", false)
	dead := put("an unreferenced value on its way to the hot tier", false)
	require.NoError(t, ps.Close())
	before := objectKeys(t, blobs)
	require.Greater(t, len(before), 4, "the live value is split into a manifest and parts")

	liveRefs := func(yield func(string) bool) error {
		_ = yield(live) && yield(shared)
		return nil
	}
	st, err := NewSweeper(bucketURL, "", time.Hour, nil).Sweep(ctx, liveRefs, SweepOptions{Erase: true, Erased: []string{erased, shared}})
	require.NoError(t, err)
	assert.Equal(t, 1, st.ObjectsDeleted, "the erased row's object")
	assert.Equal(t, 1, st.KeptShared)
	assert.Equal(t, 1, st.KeptRecent, "the unreferenced value within the grace period")
	after := objectKeys(t, blobs)
	assert.Len(t, after, len(before)-1)
	_, erasedKey, err := ref.SplitURI(erased)
	require.NoError(t, err)
	require.Contains(t, before, erasedKey)
	assert.NotContains(t, after, erasedKey)

	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	st, err = NewSweeper(bucketURL, "", time.Hour, later).Sweep(ctx, liveRefs, SweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, st.ObjectsDeleted, "the unreferenced value, past the grace period")
	_, deadKey, err := ref.SplitURI(dead)
	require.NoError(t, err)
	require.Contains(t, before, deadKey)
	assert.NotContains(t, objectKeys(t, blobs), deadKey)
	assert.Len(t, objectKeys(t, blobs), len(before)-2, "the live value and the shared one stay whole")

	wd, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, wd, "nothing created in the working directory")
}
