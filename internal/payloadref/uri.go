// SPDX-License-Identifier: Apache-2.0

// Package payloadref is runagain's payload reference format: how a large attribute value that the
// payload_offload processor moved to blob storage is stored, named and read back.
//
// # Convention
//
// An attribute K whose value was offloaded is removed and replaced by K_ref (RefSuffix) holding the
// URI of an object (docs/architecture.md "Payload references"; the convention of OpenTelemetry's GenAI
// upload hooks). A log body that was offloaded is emptied and LogBodyRefKey holds its URI.
//
// # Layouts
//
// Objects live in any gocloud.dev/blob bucket (file://, s3://, gs://, azblob://, mem://; the drivers
// are compiled into this package). They are content addressed by the SHA-256 of the ORIGINAL bytes
// and written once. Each object is one of:
//
//	value     zstd frame of the original bytes                  name sha256/<64 hex>.zst
//	manifest  zstd frame of a JSON Manifest whose parts,        name sha256/<64 hex>.manifest.zst
//	          concatenated, are the original bytes
//
// Packs (NewStore with StoreOptions.Dir; the collector's layout): objects are appended raw (no
// compression on the request path) to an open segment in Dir/staging, fsynced once per Batch (one
// ConsumeTraces/ConsumeLogs call) before the batch is acknowledged. The same objects are gathered
// in memory into blocks of PackBlockSize (256 KiB) original bytes, each compressed as one zstd
// frame when full, so the size of the pack as it will be uploaded is known; the segment is sealed
// and uploaded whole, with one request, before that size reaches PackMaxSize (16 MiB), or
// PackMaxAge (60 s) after its first object, in the spirit of git and restic packs:
//
//	<bucket prefix>packs/<id>.pack   zstd blocks (consecutive objects, concatenated), then a
//	                                 trailer (digest, kind -> block offset and length, offset and
//	                                 length in the block; sorted by digest, with a 256-entry
//	                                 fanout), then a 24-byte footer ending "RAPACK02" (pack.go)
//
// Compressing ~0.5 KiB chat messages together rather than one by one is what makes the blocks pay:
// zstd finds the repetition between the messages of a conversation (TestPackBlocksLayout: 2.5x
// smaller). Packs written before blocks ("RAPACK01": a 48-byte header and a zstd frame per
// object) still resolve; Collect rewrites any pack in the block layout.
//
// A reference names the pack and the object: the pack's URI with the object's name as fragment,
// <bucket URI>/packs/<id>.pack#sha256/<hex>.zst. The Resolver reads the pack's tail (fanout and
// footer), the trailer entries of the object's first digest byte and the object's block with
// ranged reads (NewRangeReader), all cached (decoded blocks in a bounded LRU, so the messages of a
// conversation decode their block once), checks a cached pack's attributes once per Fetch (a
// pack Collect rewrote is never read from a stale cache) and verifies the digest; packs not
// yet uploaded are read from the staging areas the Resolver was given (WithStagingDir; the CLI and
// the UI pass the configured store's): a reader on another machine sees them once uploaded.
// An upload that fails is retried with backoff until it succeeds, never dropped; after a crash
// the next Store on the same Dir cuts a torn segment at its last whole record, seals, indexes
// and uploads it (building its blocks from the staging file). A persistent digest index (SQLite, WAL: Dir/payload-index.db, shared by the
// collector and the CLI), with a bounded LRU of locations in front (StoreOptions.KnownObjects)
// and a Bloom filter of every indexed digest (filter.go: a new object costs no SQLite lookup),
// finds an object already in any pack, so it is never written again. Its rows are inserted in
// the background (indexer.go), before the pack is uploaded; dedup hits update an object's
// last-referenced time at most once per TouchWindow, and at once after a Collect began, which
// keeps Collect's (collect.go) guarantees (see Batch).
//
// Single objects (NewStore without Dir; the layout before packs, still resolved everywhere):
//
//	<bucket prefix>sha256/<64 hex>.zst            a value
//	<bucket prefix>sha256/<64 hex>.manifest.zst   a manifest
//
// A manifest is how conversation dedup works: a JSON message array (or a JSON object holding
// arrays, such as an HTTP request body with "messages") is cut at element boundaries; every element
// at least ChunkMin bytes long is its own object, the bytes between (brackets, commas, whitespace,
// small members) are kept literally, so the exact original bytes (whitespace and key order
// included) come back. Long part lists are grouped into sub-manifests at content-defined boundaries,
// so a conversation that resends its history shares every sub-manifest but the last with the
// previous turn. Every object, at every level, is named by the SHA-256 of the bytes it stands for,
// and the Resolver verifies each of them. A part names the pack of its object (Part.P; empty for
// a single object). Collect rewrites packs under the same key, so references stay valid.
//
// # URIs
//
// The URI of an object is the bucket URL with the object key appended to its path and the bucket's
// query parameters kept (so the reader can open the same bucket: endpoint, region...), except
// "prefix" (folded into the path) and fileblob's writer-only create_dir, no_tmp_dir, dir_file_mode
// and metadata. file:// URLs are made absolute (file://./data and file://data are relative to the
// working directory). Examples:
//
//	file:///var/lib/runagain/blobs/packs/187c3f0e2a1b9d40-5f2e9a1c0b7d.pack#sha256/3a...zst
//	file:///var/lib/runagain/blobs/sha256/3a...zst                 (single-object layout)
//	s3://payloads/runagain/sha256/3a...zst?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&use_path_style=true
//
// Credentials never appear in a URI; they come from the environment of the process that reads
// (AWS_ACCESS_KEY_ID..., GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*).
//
// mem:// buckets are process local: every OpenBucket of "mem://NAME" in one process returns the
// same bucket, so a processor and a Resolver in one test see the same objects.
package payloadref

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

// keyPrefixOf returns the part of key before "sha256/": the bucket prefix a manifest's children share.
func keyPrefixOf(key string) string {
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

// normalizeBucketURL makes file:// URLs absolute ("file://./data/blobs" and "file:data/blobs" are
// relative to the working directory) so that references stay valid from any directory.
func normalizeBucketURL(raw string) (*url.URL, error) {
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
	o, err := newObjectURIs(bucketURL)
	if err != nil {
		return "", err
	}
	return o.of(key), nil
}

// objectURIs builds the object URIs of one bucket URL (ObjectURI's), parsed and normalized once:
// a Store names an object per Put.
type objectURIs struct {
	u    url.URL // the bucket's URL without its prefix and writer-only parameters
	path string  // u's path, then "/" and the key prefix
}

func newObjectURIs(bucketURL string) (objectURIs, error) {
	u, err := normalizeBucketURL(bucketURL)
	if err != nil {
		return objectURIs{}, err
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	for _, p := range writerOnlyParams {
		q.Del(p)
	}
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return objectURIs{u: *u, path: strings.TrimSuffix(u.Path, "/") + "/" + prefix}, nil
}

// of returns the URI of the object key (the key prefix excluded).
func (o objectURIs) of(key string) string {
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
	u, err := normalizeBucketURL(bucketURL)
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
