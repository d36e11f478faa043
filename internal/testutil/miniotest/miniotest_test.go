// SPDX-License-Identifier: Apache-2.0

package miniotest_test

import (
	"context"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// TestStartStopRestart writes through gocloud's s3blob, stops the server (reads must fail),
// restarts it on the same port and data directory, and reads the object back.
func TestStartStopRestart(t *testing.T) {
	srv := miniotest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := blob.OpenBucket(ctx, srv.URL("p/"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "k", []byte("hello"), nil); err != nil {
		t.Fatalf("write: %v", err)
	}
	srv.Stop()
	short, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	if _, err := b.ReadAll(short, "k"); err == nil {
		t.Fatal("read succeeded while minio was stopped")
	}
	cancel2()
	srv.Restart()
	got, err := b.ReadAll(ctx, "k")
	if err != nil {
		t.Fatalf("read after restart: %v", err)
	}
	if string(got) != "hello" {
		t.Fatalf("read %q after restart, want hello", got)
	}
}
