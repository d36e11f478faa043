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
// are compiled into package ref). They are content addressed by the SHA-256 of the ORIGINAL bytes
// and written once. Each object is one of:
//
//	value     zstd frame of the original bytes                  name sha256/<64 hex>.zst
//	manifest  zstd frame of a JSON Manifest whose parts,        name sha256/<64 hex>.manifest.zst
//	          concatenated, are the original bytes
//
// Packs (writer.NewStore with StoreOptions.Dir; the collector's layout): objects are appended raw (no
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
//	                                 fanout), then a 24-byte footer ending "RAPACK02" (packfile)
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
// and a Bloom filter of every indexed digest (package digestindex: a new object costs no SQLite lookup),
// finds an object already in any pack, so it is never written again. Its rows are inserted in
// the background (writer's indexer), before the pack is uploaded; dedup hits update an object's
// last-referenced time at most once per digestindex.TouchWindow, and at once after a Collect began, which
// keeps Collect's (package collect) guarantees (see writer.Batch).
//
// Single objects (writer.NewStore without Dir; the layout before packs, still resolved everywhere):
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
// # Packages
//
// Each concern is a package, each importing only those listed before it:
//
//	ref          the reference convention: K_ref keys, object keys, pack references, Object and
//	             Location, the manifest document, object URIs, OpenBucket
//	packfile     the pack format (v1 records and trailer, v2 blocks, fanout and footer), the block
//	             packer, the pack reader (ranged reads, caches, staging files), pack uploads
//	payloadref   this package: the read side, Resolver (Fetch, and the Rehydrate functions)
//	digestindex  the digest index (SQLite, Bloom filter): object -> pack, last-referenced times,
//	             the collect generation
//	collect      garbage collection: mark from the live references, sweep packs and single objects
//	writer       the write path: Store and Batch, manifest planning (split, deltas), the staging
//	             segment, seal and upload, the background indexer; Store.Collect runs collect
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
