// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// TestStagingWrittenAtCommit: a batch's records reach the staging file in one write at Commit
// (not one write per object): before Commit the open segment's file holds none of them; after,
// all, and a reader of the staging area (the CLI) resolves every reference.
func TestStagingWrittenAtCommit(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	b := s.NewBatch()
	var refs []string
	var vals [][]byte
	for i := 0; i < 5; i++ {
		v := conversation(fmt.Sprintf("batch-%d", i), 3)
		res, err := b.Put(ctx, v, true)
		if err != nil {
			t.Fatal(err)
		}
		refs, vals = append(refs, res.URI), append(vals, v)
	}
	staged, _ := filepath.Glob(filepath.Join(dir, packfile.StagingDir, "*"+ref.PackSuffix))
	if len(staged) != 1 {
		t.Fatalf("staged packs: %v", staged)
	}
	if st, err := os.Stat(staged[0]); err != nil || st.Size() != 0 {
		t.Fatalf("staging file before Commit: %v %v, want empty (written at Commit)", st.Size(), err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	s.pw.mu.Lock()
	want := s.pw.cur.size
	s.pw.mu.Unlock()
	if st, err := os.Stat(staged[0]); err != nil || st.Size() != want || want == 0 {
		t.Fatalf("staging file after Commit: %d bytes, want %d", st.Size(), want)
	}
	for i, uri := range refs {
		if got, err := newResolver(t, payloadref.WithStagingDir(s.staging)).Fetch(ctx, uri); err != nil || !bytes.Equal(got, vals[i]) {
			t.Fatalf("value %d from the staging area: %v", i, err)
		}
	}
}
