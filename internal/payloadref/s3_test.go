package payloadref

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
		out, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("once/" + ValueKey(sha256.Sum256(data)))})
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
