// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// TestS3WrittenOnce stores a small value (conditional write path) and a large one (existence
// check path) on MinIO through two Stores with cold known-sets: the second Store writes nothing,
// and the objects keep their first ETag and modification time.
func TestS3WrittenOnce(t *testing.T) {
	srv := miniotest.Start(t)
	ctx := context.Background()
	url := srv.URL("once/")
	small := []byte(strings.Repeat("small value ", 100))
	large := []byte(strings.Repeat("large value ", 10000)) // > ExistsCheckMin
	head := func(data []byte) *s3.HeadObjectOutput {
		out, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("once/" + ref.ValueKey(sha256.Sum256(data)))})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	s1 := newStore(t, url, StoreOptions{})
	for _, v := range [][]byte{small, large} {
		res, err := s1.Put(ctx, v, false)
		if err != nil || res.Written != 1 {
			t.Fatalf("first put: %+v, %v", res, err)
		}
	}
	before := []*s3.HeadObjectOutput{head(small), head(large)}
	time.Sleep(1100 * time.Millisecond) // S3 modification times have 1 s resolution: a rewrite would show
	s2 := newStore(t, url, StoreOptions{})
	r := newResolver(t)
	for i, v := range [][]byte{small, large} {
		res, err := s2.Put(ctx, v, false)
		if err != nil || res.Written != 0 || res.DedupHits != 1 {
			t.Fatalf("second put of value %d: %+v, %v: want a dedup hit", i, res, err)
		}
		after := head(v)
		if *after.ETag != *before[i].ETag || !after.LastModified.Equal(*before[i].LastModified) {
			t.Fatalf("value %d was rewritten", i)
		}
		got, err := r.Fetch(ctx, res.URI)
		if err != nil || string(got) != string(v) {
			t.Fatalf("fetch %s: %v", res.URI, err)
		}
	}
}

// TestS3Packs: the pack layout on MinIO: objects are read back with ranged reads from the
// uploaded pack, a new Store on the same data directory deduplicates through the index, and an
// erasure leaves no byte of a dead value in the bucket (decompressed content searched).
func TestS3Packs(t *testing.T) {
	srv := miniotest.Start(t)
	ctx := context.Background()
	url := srv.URL("packs-test/")
	dir := t.TempDir()
	s1, err := NewStore(ctx, url, StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	staged(t, s1)
	live := conversation("S3-KEEP", 12)
	dead := []byte("S3-SECRET " + strings.Repeat("erase me ", 100))
	liveRes, err := s1.Put(ctx, live, true)
	if err != nil {
		t.Fatal(err)
	}
	deadRes, err := s1.Put(ctx, dead, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil { // seals and uploads
		t.Fatal(err)
	}
	out, err := srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String("packs-test/")})
	if err != nil || len(out.Contents) != 1 || !strings.HasPrefix(*out.Contents[0].Key, "packs-test/"+ref.PackDir) {
		t.Fatalf("bucket after close: %v %v, want one pack", out.Contents, err)
	}
	r := newResolver(t)
	for u, v := range map[string][]byte{liveRes.URI: live, deadRes.URI: dead} {
		if got, err := r.Fetch(ctx, u); err != nil || string(got) != string(v) {
			t.Fatalf("ranged fetch %s: %v", u, err)
		}
	}
	s2 := newPackStore(t, url, dir, StoreOptions{})
	if res, err := s2.Put(ctx, live, true); err != nil || res.Written != 0 || res.URI != liveRes.URI {
		t.Fatalf("put again through the index: %+v %v", res, err)
	}
	time.Sleep(10 * time.Millisecond)
	st, err := s2.Collect(ctx, liveOf(liveRes.URI), collect.Options{Erase: true})
	if err != nil || st.PacksRewritten != 1 {
		t.Fatalf("erase: %+v %v", st, err)
	}
	raw := decodedBucket(t, url)
	if strings.Contains(string(raw), "S3-SECRET") || !strings.Contains(string(raw), "S3-KEEP message 11") {
		t.Fatal("after erase: the dead value remains or the live one is gone")
	}
	if got, err := newResolver(t).Fetch(ctx, liveRes.URI); err != nil || string(got) != string(live) {
		t.Fatalf("live value after the rewrite: %v", err)
	}
	if _, err := r.Fetch(ctx, deadRes.URI); err == nil {
		t.Fatal("the erased value still resolves (through a cached trailer)")
	}
}
