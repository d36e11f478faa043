// SPDX-License-Identifier: Apache-2.0

// Package packfile is the pack format of the payloadref layout and its I/O: the v1 layout
// (records with headers, the staging files' layout) and the v2 layout (zstd blocks, a trailer
// sorted by digest with a 256-entry fanout, a footer), the block packer that builds v2 packs
// (BlockPacker, PackBytes, Repack), the Reader that reads one object of a pack with cached ranged
// reads (or from a staging area, sealed or not: ReadLocalTrailer, ScanRecords), and writing a
// whole pack to a bucket (Write, WriteFile). It knows nothing of the digest index, the writer or
// collection; it imports only package ref.
package packfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Pack file layouts (see the package doc, "Packs"). All integers are big-endian.
//
// Version 2 ("RAPACK02", what the uploader writes since packs are compressed in blocks):
//
//	block*  trailer  footer
//
//	block   = one zstd frame of the original bytes of consecutive objects, concatenated in the
//	          order they were appended (about PackBlockSize bytes before compression; an object
//	          larger than that is a block of its own)
//	trailer = entry* (sorted by digest, then kind) | fanout
//	entry   = SHA-256 (32) | kind (1: 0 value, 1 manifest) | block offset (uint64) |
//	          block length (uint32) | offset in the decoded block (uint32) | length (uint32)
//	fanout  = 256 uint32: fanout[i] is the number of entries whose digest starts with a byte <= i
//	          (git's pack index fanout), so a reader fetches only the entries of one first byte
//	footer  = trailer offset (uint64) | trailer length (uint32) | CRC-32C of the trailer (uint32) |
//	          "RAPACK02"
//
// Version 1 ("RAPACK01", packs written before blocks; still the layout of the staging area):
//
//	record*  trailer  footer
//
//	record  = header (RecordHeaderSize bytes) + the object's bytes
//	header  = "RAOB" | SHA-256 (32) | kind (1) | 3 zero bytes | stored length (uint32) |
//	          CRC-32C of the 44 bytes before it (uint32)
//	kind    = bit 0: manifest; bit 1: the bytes are stored raw (staging files written since packs
//	          are compressed in blocks), otherwise they are one zstd frame (uploaded v1 packs)
//	trailer = entryCount (uint32) | entry*      entry = SHA-256 (32) | kind (1) |
//	          record bytes offset (uint64) | stored length (uint32) | original length (uint64)
//	footer  = as in version 2, ending "RAPACK01"
//
// The record headers make an unsealed staging file (the open segment, or one left by a crash)
// readable by a scan; a v2 trailer makes an uploaded pack readable with three small ranged reads
// (tail: fanout and footer; the entries of one first byte; the block), as in git and restic packs.
const (
	recordMagic      = "RAOB"
	packMagic        = "RAPACK01"
	packMagicV2      = "RAPACK02"
	RecordHeaderSize = 48
	FooterSize       = 24
	entrySize        = 32 + 1 + 8 + 4 + 8
	entrySizeV2      = 32 + 1 + 8 + 4 + 4 + 4
	fanoutSize       = 256 * 4
	kindManifest     = 1
	kindRaw          = 2
	// DefaultBlockSize is the size before compression of the blocks of an uploaded pack
	// (StoreOptions.PackBlockSize): large enough that zstd finds the repetition between the
	// messages of a conversation, small enough that reading one object decodes little. 256 KiB
	// at SpeedFastest (DefaultLevel) stores loadgen's traffic in the bytes 128 KiB at
	// SpeedDefault did, in about 0.55 of the compression CPU (BENCHMARKS.md, issue 17 offload).
	DefaultBlockSize = 256 << 10
	// DefaultLevel is the zstd level of pack blocks (StoreOptions.PackLevel).
	DefaultLevel = zstd.SpeedFastest
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is where one object is in a pack.
//
// In a v1 pack (and a staging file) off and zlen locate the object's record bytes (a zstd frame,
// or the raw bytes when rawRec), and inOff is -1. In a v2 pack they locate the zstd block holding
// the object, and the object is [inOff, inOff+raw) of the decoded block.
type Entry struct {
	ref.Object
	Off    int64  // offset of the stored bytes (v1) or of the block (v2)
	ZLen   uint32 // length of the stored bytes (v1) or of the block (v2)
	Raw    int64  // length of the original bytes (of the manifest document for a manifest); -1 unknown
	InOff  int64  // v2: offset in the decoded block; -1 in v1
	RawRec bool   // v1 staging record stored raw (not compressed)
}

// Size is what the object weighs in its pack for the dead fraction of Collect: its stored bytes
// in a v1 pack, its original bytes in a v2 pack (its share of a block is not known).
func (e Entry) Size() int64 {
	if e.InOff >= 0 {
		return e.Raw
	}
	return int64(e.ZLen)
}

// AppendRecordHeader appends the RecordHeaderSize-byte header of a staging record of zlen stored
// bytes (raw, or a zstd frame) to dst: magic, digest, kind, length and a CRC-32C of those 44 bytes.
func AppendRecordHeader(dst []byte, k ref.Object, zlen int, raw bool) []byte {
	n := len(dst)
	dst = append(dst, recordMagic...)
	dst = append(dst, k.Sum[:]...)
	dst = append(dst, kindByte(k.Manifest, raw), 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(zlen))
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[n:n+44], castagnoli))
}

// decodeRecordHeader reads a record header; ok is false when h is not one (torn or foreign bytes).
func decodeRecordHeader(h []byte) (k ref.Object, zlen uint32, raw, ok bool) {
	if len(h) < RecordHeaderSize || string(h[:4]) != recordMagic ||
		binary.BigEndian.Uint32(h[44:48]) != crc32.Checksum(h[:44], castagnoli) || h[36] > kindManifest|kindRaw {
		return k, 0, false, false
	}
	copy(k.Sum[:], h[4:36])
	k.Manifest = h[36]&kindManifest != 0
	return k, binary.BigEndian.Uint32(h[40:44]), h[36]&kindRaw != 0, true
}

func kindByte(manifest, raw bool) byte {
	var b byte
	if manifest {
		b |= kindManifest
	}
	if raw {
		b |= kindRaw
	}
	return b
}

// EncodeTrailer returns a v1 trailer+footer for entries (staging files), the trailer starting at offset off.
func EncodeTrailer(entries []Entry, off int64) []byte {
	t := make([]byte, 4, 4+len(entries)*entrySize+FooterSize)
	binary.BigEndian.PutUint32(t, uint32(len(entries)))
	for _, e := range entries {
		var b [entrySize]byte
		copy(b[:32], e.Sum[:])
		b[32] = kindByte(e.Manifest, e.RawRec)
		binary.BigEndian.PutUint64(b[33:41], uint64(e.Off))
		binary.BigEndian.PutUint32(b[41:45], e.ZLen)
		binary.BigEndian.PutUint64(b[45:53], uint64(e.Raw))
		t = append(t, b[:]...)
	}
	return appendFooter(t, off, packMagic)
}

// appendFooter appends the footer of trailer t (starting at offset off) to t.
func appendFooter(t []byte, off int64, magic string) []byte {
	var f [FooterSize]byte
	binary.BigEndian.PutUint64(f[0:8], uint64(off))
	binary.BigEndian.PutUint32(f[8:12], uint32(len(t)))
	binary.BigEndian.PutUint32(f[12:16], crc32.Checksum(t, castagnoli))
	copy(f[16:], magic)
	return append(t, f[:]...)
}

// ErrNoFooter: the bytes do not end with a pack footer (an unsealed segment).
var ErrNoFooter = errors.New("no pack footer")

// DecodeFooter returns the trailer's offset and length from the last FooterSize bytes of a pack
// of size bytes, the trailer's checksum, and the layout version (1 or 2).
func DecodeFooter(f []byte, size int64) (off int64, n int, crc uint32, version int, err error) {
	switch {
	case len(f) != FooterSize:
		return 0, 0, 0, 0, ErrNoFooter
	case string(f[16:]) == packMagic:
		version = 1
	case string(f[16:]) == packMagicV2:
		version = 2
	default:
		return 0, 0, 0, 0, ErrNoFooter
	}
	off = int64(binary.BigEndian.Uint64(f[0:8]))
	n = int(binary.BigEndian.Uint32(f[8:12]))
	if off < 0 || off+int64(n)+FooterSize != size || n < 4 || version == 2 && (n < fanoutSize || (n-fanoutSize)%entrySizeV2 != 0) {
		return 0, 0, 0, 0, fmt.Errorf("pack footer: trailer at %d+%d does not end a %d byte pack", off, n, size)
	}
	return off, n, binary.BigEndian.Uint32(f[12:16]), version, nil
}

// decodeAnyTrailer parses a whole trailer of either version (checked against crc).
func decodeAnyTrailer(t []byte, crc uint32, trailerOff int64, version int) ([]Entry, error) {
	if version == 2 {
		return decodeTrailerV2(t, crc, trailerOff)
	}
	return decodeTrailer(t, crc, trailerOff)
}

// decodeTrailer parses a trailer (checked against crc) into its entries.
func decodeTrailer(t []byte, crc uint32, trailerOff int64) ([]Entry, error) {
	if crc32.Checksum(t, castagnoli) != crc {
		return nil, errors.New("pack trailer: checksum mismatch")
	}
	n := int(binary.BigEndian.Uint32(t[:4]))
	if len(t) != 4+n*entrySize {
		return nil, fmt.Errorf("pack trailer: %d bytes for %d entries", len(t), n)
	}
	out := make([]Entry, n)
	for i := range out {
		b := t[4+i*entrySize:]
		e := &out[i]
		copy(e.Sum[:], b[:32])
		if b[32] > kindManifest|kindRaw {
			return nil, fmt.Errorf("pack trailer: entry %d: kind %d", i, b[32])
		}
		e.Manifest = b[32]&kindManifest != 0
		e.RawRec = b[32]&kindRaw != 0
		e.Off = int64(binary.BigEndian.Uint64(b[33:41]))
		e.ZLen = binary.BigEndian.Uint32(b[41:45])
		e.Raw = int64(binary.BigEndian.Uint64(b[45:53]))
		e.InOff = -1
		if e.Off < RecordHeaderSize || e.Off+int64(e.ZLen) > trailerOff {
			return nil, fmt.Errorf("pack trailer: entry %d at %d+%d outside the records", i, e.Off, e.ZLen)
		}
	}
	return out, nil
}

// ScanRecords walks the records of an unsealed segment read through r (size bytes) and returns
// the complete ones and the offset where the valid records end (a torn tail starts there).
func ScanRecords(r io.ReaderAt, size int64) (entries []Entry, end int64) {
	return scanRecordsFrom(r, 0, size)
}

// scanRecordsFrom is ScanRecords starting at a record boundary start.
func scanRecordsFrom(r io.ReaderAt, start, size int64) (entries []Entry, end int64) {
	var h [RecordHeaderSize]byte
	end = start
	for off := start; off+RecordHeaderSize <= size; {
		if _, err := r.ReadAt(h[:], off); err != nil {
			break
		}
		k, zlen, raw, ok := decodeRecordHeader(h[:])
		if !ok || off+RecordHeaderSize+int64(zlen) > size {
			break
		}
		e := Entry{Object: k, Off: off + RecordHeaderSize, ZLen: zlen, Raw: -1, InOff: -1, RawRec: raw}
		if raw {
			e.Raw = int64(zlen)
		}
		entries = append(entries, e)
		off += RecordHeaderSize + int64(zlen)
		end = off
	}
	return entries, end
}

// StagingDir is the folder of a Store's data directory holding packs not yet in the bucket: the
// open segment, and sealed packs waiting for (or retrying) their upload.
const StagingDir = "staging"

// DirNames lists the names in dir (a staging area), in directory order; what it could read with
// the error when the read failed part way.
func DirNames(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	out := make([]string, 0, len(des))
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out, err
}

// StagedPacks counts the pack files (ref.PackSuffix) in the staging area dir.
func StagedPacks(dir string) (int, error) {
	n := 0
	names, err := DirNames(dir)
	for _, d := range names {
		if strings.HasSuffix(d, ref.PackSuffix) {
			n++
		}
	}
	return n, err
}

// EntryAt is a pack entry with its pack id.
type EntryAt struct {
	Entry
	Pack string
}
