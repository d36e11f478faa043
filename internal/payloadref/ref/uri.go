// SPDX-License-Identifier: Apache-2.0

// Package ref is the payload reference convention, the leaf every other payloadref package
// builds on: the K_ref attribute keys (RefSuffix, LogBodyRefKey, IsRefKey), the object keys of the
// single-object layout (ValueKey, ManifestKey, ParseKey), pack references (PackKey,
// ParsePackRef: <pack URI>#sha256/<hex>.zst), objects and their locations (Object, Location),
// the manifest document (Manifest, DecodeManifest), the URIs of objects (SplitURI, ObjectURI)
// and opening buckets by URL (OpenBucket; the gocloud.dev/blob drivers are compiled in here).
// It imports no other payloadref package. See package payloadref for the layouts.
package ref

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/fileblob"  // file://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	"gocloud.dev/blob/memblob"     // mem://
	_ "gocloud.dev/blob/s3blob"    // s3://

	"github.com/runagain/runagain/internal/genai"
)

const (
	// RefSuffix ends every reference attribute: K is replaced by K + RefSuffix (genai.RefSuffix,
	// the one definition).
	RefSuffix = genai.RefSuffix
	// LogBodyRefKey is the log record attribute holding the URI of an offloaded log body.
	LogBodyRefKey = "log.body_ref"
	// KeyDir is the folder (under the bucket prefix) holding every object.
	KeyDir = "sha256/"
	// ValueSuffix ends the key of an object holding zstd(original bytes).
	ValueSuffix = ".zst"
	// ManifestSuffix ends the key of an object holding zstd(JSON Manifest).
	ManifestSuffix = ".manifest.zst"
)

// ErrNotOurs is returned (wrapped) by ParseKey for keys that are not in this package's layout,
// e.g. objects written by an SDK upload hook.
var ErrNotOurs = errors.New("payloadref: not a content-addressed runagain key")

var keyRE = regexp.MustCompile(`(?:^|/)sha256/([0-9a-f]{64})(\.manifest\.zst|\.zst)$`)

// ValueKey is the key (without bucket prefix) of the object holding zstd(bytes) for a SHA-256 digest.
func ValueKey(sum [32]byte) string { return KeyDir + hex.EncodeToString(sum[:]) + ValueSuffix }

// ManifestKey is the key (without bucket prefix) of the manifest whose parts rebuild the bytes of digest sum.
func ManifestKey(sum [32]byte) string {
	return KeyDir + hex.EncodeToString(sum[:]) + ManifestSuffix
}

// ParseKey reads the digest and the kind from an object key in this package's layout. The key may
// carry a prefix before "sha256/". It returns an error wrapping ErrNotOurs otherwise.
func ParseKey(key string) (sum [32]byte, manifest bool, err error) {
	m := keyRE.FindStringSubmatch(key)
	if m == nil {
		return sum, false, fmt.Errorf("%w: %q", ErrNotOurs, key)
	}
	if _, err := hex.Decode(sum[:], []byte(m[1])); err != nil {
		return sum, false, fmt.Errorf("%w: %q", ErrNotOurs, key)
	}
	return sum, m[2] == ManifestSuffix, nil
}

// KeyPrefixOf returns the part of key before "sha256/": the bucket prefix a manifest's children share.
func KeyPrefixOf(key string) string {
	i := strings.LastIndex(key, KeyDir)
	if i < 0 {
		return ""
	}
	return key[:i]
}

// SplitURI splits an object URI into the URL of its bucket (as blob.OpenBucket takes it) and the
// object key. For file:// the bucket is the directory above "sha256/" (or the parent directory
// for foreign objects); for other schemes the bucket is the host and the key is the path.
func SplitURI(uri string) (bucketURL, key string, err error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", "", fmt.Errorf("payloadref: invalid URI %q: %w", uri, err)
	}
	if u.Scheme == "" {
		return "", "", fmt.Errorf("payloadref: URI %q has no scheme", uri)
	}
	b := *u
	b.Fragment = ""
	b.RawPath = ""
	if u.Scheme == "file" {
		p := u.Path
		i := strings.LastIndex(p, "/"+KeyDir)
		if j := strings.LastIndex(p, "/"+PackDir); j > i {
			i = j
		}
		if i >= 0 {
			b.Path, key = p[:i], p[i+1:]
		} else {
			b.Path, key = path.Dir(p), path.Base(p)
		}
		if key == "" || key == "." || key == "/" {
			return "", "", fmt.Errorf("payloadref: URI %q names no object", uri)
		}
		return b.String(), key, nil
	}
	key = strings.TrimPrefix(u.Path, "/")
	if key == "" {
		return "", "", fmt.Errorf("payloadref: URI %q names no object", uri)
	}
	b.Path = ""
	return b.String(), key, nil
}

// NormalizeBucketURL makes file:// URLs absolute ("file://./data/blobs" and "file:data/blobs" are
// relative to the working directory) so that references stay valid from any directory.
func NormalizeBucketURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid bucket URL %q: %w", raw, err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("bucket URL %q has no scheme (want file://, s3://, gs://, azblob:// or mem://)", raw)
	}
	if u.Scheme == "file" {
		p := u.Path
		switch {
		case u.Opaque != "":
			p = u.Opaque
		case u.Host != "" && u.Host != "localhost":
			// file://./data, file://data/blobs: a path relative to the working directory (as
			// "file://${env:RUNAGAIN_DATA_DIR:-./data}/blobs" gives for a relative data dir).
			p = u.Host + p
		}
		abs, err := filepath.Abs(filepath.FromSlash(p))
		if err != nil {
			return nil, fmt.Errorf("bucket URL %q: %w", raw, err)
		}
		u.Opaque, u.Host, u.RawPath = "", "", ""
		u.Path = filepath.ToSlash(abs)
	}
	return u, nil
}

// ObjectURI returns the URI of the object key in the bucket opened from bucketURL (see package doc).
func ObjectURI(bucketURL, key string) (string, error) {
	o, err := NewObjectURIs(bucketURL)
	if err != nil {
		return "", err
	}
	return o.Of(key), nil
}

// ObjectURIs builds the object URIs of one bucket URL (ObjectURI's), parsed and normalized once:
// a Store names an object per Put.
type ObjectURIs struct {
	u    url.URL // the bucket's URL without its prefix and writer-only parameters
	path string  // u's path, then "/" and the key prefix
}

// NewObjectURIs parses and normalizes bucketURL once for Of.
func NewObjectURIs(bucketURL string) (ObjectURIs, error) {
	u, err := NormalizeBucketURL(bucketURL)
	if err != nil {
		return ObjectURIs{}, err
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	for _, p := range writerOnlyParams {
		q.Del(p)
	}
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return ObjectURIs{u: *u, path: strings.TrimSuffix(u.Path, "/") + "/" + prefix}, nil
}

// Of returns the URI of the object key (the key prefix excluded).
func (o ObjectURIs) Of(key string) string {
	u := o.u
	u.Path = o.path + key
	return u.String()
}

// writerOnlyParams are fileblob URL parameters that matter only when writing; they are left out
// of reference URIs.
var writerOnlyParams = []string{"create_dir", "no_tmp_dir", "dir_file_mode", "metadata"}

var memBuckets = struct {
	sync.Mutex
	m map[string]*blob.Bucket
}{m: map[string]*blob.Bucket{}}

// OpenBucket opens a bucket from a gocloud.dev/blob URL, making file:// URLs absolute, and sharing
// mem:// buckets by host within the process (mem:// takes no query parameters here; Store handles
// "prefix" itself). The returned close function must be called once;
// it does not close shared mem:// buckets.
func OpenBucket(ctx context.Context, bucketURL string) (*blob.Bucket, func() error, error) {
	u, err := NormalizeBucketURL(bucketURL)
	if err != nil {
		return nil, nil, err
	}
	if u.Scheme == memblob.Scheme {
		if len(u.Query()) > 0 {
			return nil, nil, fmt.Errorf("open bucket %q: mem:// takes no query parameters", bucketURL)
		}
		memBuckets.Lock()
		b, ok := memBuckets.m[u.Host]
		if !ok {
			b = memblob.OpenBucket(&memblob.Options{NoMD5: true})
			memBuckets.m[u.Host] = b
		}
		memBuckets.Unlock()
		return b, func() error { return nil }, nil
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, nil, fmt.Errorf("open bucket %q: %w", bucketURL, err)
	}
	return b, b.Close, nil
}

// IsRefKey tells whether an attribute key is a payload reference (ends in RefSuffix).
func IsRefKey(k string) bool { return len(k) > len(RefSuffix) && strings.HasSuffix(k, RefSuffix) }
