// SPDX-License-Identifier: Apache-2.0

package ref

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestURIs(t *testing.T) {
	cwd, _ := os.Getwd()
	key := "sha256/" + strings.Repeat("ab", 32) + ".zst"
	cases := []struct{ bucket, uri, splitBucket, splitKey string }{
		{"file:///data/blobs", "file:///data/blobs/" + key, "file:///data/blobs", key},
		{"file:///data/blobs/?create_dir=true&metadata=skip&no_tmp_dir=1", "file:///data/blobs/" + key, "file:///data/blobs", key},
		{"file://./rel/blobs", "file://" + cwd + "/rel/blobs/" + key, "file://" + cwd + "/rel/blobs", key},
		{"file://rel/blobs?create_dir=true", "file://" + cwd + "/rel/blobs/" + key, "file://" + cwd + "/rel/blobs", key},
		{"file:///data?prefix=p/", "file:///data/p/" + key, "file:///data/p", key},
		{"s3://bkt?endpoint=http://127.0.0.1:9000&region=us-east-1&use_path_style=true&prefix=payloads/",
			"s3://bkt/payloads/" + key + "?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&use_path_style=true",
			"s3://bkt?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&use_path_style=true", "payloads/" + key},
		{"gs://bkt", "gs://bkt/" + key, "gs://bkt", key},
		{"azblob://container?prefix=a/b/", "azblob://container/a/b/" + key, "azblob://container", "a/b/" + key},
		{"mem://x", "mem://x/" + key, "mem://x", key},
	}
	for _, c := range cases {
		uri, err := ObjectURI(c.bucket, key)
		if err != nil || uri != c.uri {
			t.Errorf("ObjectURI(%q) = %q, %v; want %q", c.bucket, uri, err, c.uri)
			continue
		}
		b, k, err := SplitURI(uri)
		if err != nil || b != c.splitBucket || k != c.splitKey {
			t.Errorf("SplitURI(%q) = %q, %q, %v; want %q, %q", uri, b, k, err, c.splitBucket, c.splitKey)
		}
		if _, _, err := ParseKey(k); err != nil {
			t.Errorf("ParseKey(%q): %v", k, err)
		}
	}
	for _, bad := range []string{"", "no-scheme/path", "%zz"} {
		if _, err := ObjectURI(bad, key); err == nil {
			t.Errorf("ObjectURI(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"s3://bkt", "s3://bkt/", "relative/path", "::"} {
		if _, _, err := SplitURI(bad); err == nil {
			t.Errorf("SplitURI(%q) accepted", bad)
		}
	}
	if _, _, err := ParseKey("sha256/abc.zst"); !errors.Is(err, ErrNotOurs) {
		t.Errorf("ParseKey(short hex) = %v, want ErrNotOurs", err)
	}
}
