// SPDX-License-Identifier: Apache-2.0

package packfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

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
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(BlockWindow(4096)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enc.Close() }()
	objs := make([][]byte, 40)
	for i := range objs {
		objs[i] = []byte(fmt.Sprintf("object %d %s", i, strings.Repeat("agent text ", 60+i)))
	}
	gw := &gateWriter{open: make(chan struct{})}
	ap := NewAsyncBlockPacker(enc, 4096, gw)
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
	sp := NewBlockPacker(enc, 4096, &sync)
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
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(BlockWindow(4096)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enc.Close() }()
	for _, ok := range []int{0, 2} {
		ap := NewAsyncBlockPacker(enc, 4096, &failAfterWriter{ok: ok})
		for i := 0; i < 40; i++ {
			o := []byte(fmt.Sprintf("object %d %s", i, strings.Repeat("agent text ", 60+i)))
			ap.Add(ref.Object{Sum: sha256.Sum256(o)}, o)
		}
		if _, err := ap.Finish(); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("failing after %d writes: finish returned %v, want the write error", ok, err)
		}
	}
}
