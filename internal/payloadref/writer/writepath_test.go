// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// gateWriter blocks every Write until open is closed, then appends to buf.
type gateWriter struct {
	open chan struct{}
	buf  bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.open
	return g.buf.Write(p)
}

// TestAsyncBlockPackerOffLock: an async packer's add returns while its blocks cannot be
// compressed and written yet (the writer blocks), so the pack writer's lock is not held over
// block compression; once the writer moves, the pack it writes is byte for byte the pack a
// packer compressing inline writes.
func TestAsyncBlockPackerOffLock(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(blockWindow(4096)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enc.Close() }()
	objs := make([][]byte, 40)
	for i := range objs {
		objs[i] = []byte(fmt.Sprintf("object %d %s", i, strings.Repeat("agent text ", 60+i)))
	}
	gw := &gateWriter{open: make(chan struct{})}
	ap := packfile.NewAsyncBlockPacker(enc, 4096, gw)
	added := make(chan struct{})
	go func() {
		defer close(added)
		for _, o := range objs { // about 7 full blocks: within the queue, none written yet
			ap.Add(ref.Object{Sum: sha256.Sum256(o)}, o)
		}
	}()
	select {
	case <-added:
	case <-time.After(30 * time.Second):
		close(gw.open)
		t.Fatal("add waited for block compression and writing")
	}
	if ap.Size(0, 0) <= 0 {
		t.Fatal("size bound with queued blocks")
	}
	close(gw.open)
	aes, err := ap.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var sync bytes.Buffer
	sp := packfile.NewBlockPacker(enc, 4096, &sync)
	for _, o := range objs {
		sp.Add(ref.Object{Sum: sha256.Sum256(o)}, o)
	}
	ses, err := sp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gw.buf.Bytes(), sync.Bytes()) || fmt.Sprint(aes) != fmt.Sprint(ses) {
		t.Fatal("async packer's pack differs from the inline packer's")
	}
	if int64(gw.buf.Len()) > ap.Size(0, 0) {
		t.Fatalf("pack of %d bytes above its bound %d", gw.buf.Len(), ap.Size(0, 0))
	}
}

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

// failAfterWriter accepts ok writes, then fails every one.
type failAfterWriter struct{ ok int }

func (f *failAfterWriter) Write(p []byte) (int, error) {
	if f.ok == 0 {
		return 0, errors.New("disk full")
	}
	f.ok--
	return len(p), nil
}

// TestAsyncBlockPackerWriteError: a block write that fails on the packer's goroutine, after add
// returned, is not lost: finish returns it (the seal then drops the blocks file, built again
// from the staging file at upload), for a failure at the first block or a later one.
func TestAsyncBlockPackerWriteError(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(blockWindow(4096)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enc.Close() }()
	for _, ok := range []int{0, 2} {
		ap := packfile.NewAsyncBlockPacker(enc, 4096, &failAfterWriter{ok: ok})
		for i := 0; i < 40; i++ {
			o := []byte(fmt.Sprintf("object %d %s", i, strings.Repeat("agent text ", 60+i)))
			ap.Add(ref.Object{Sum: sha256.Sum256(o)}, o)
		}
		if _, err := ap.Finish(); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("failing after %d writes: finish returned %v, want the write error", ok, err)
		}
	}
}
