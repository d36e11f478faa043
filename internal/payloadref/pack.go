// SPDX-License-Identifier: Apache-2.0

package payloadref

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
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
//	record  = header (recordHeaderSize bytes) + the object's bytes
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
	recordHeaderSize = 48
	footerSize       = 24
	entrySize        = 32 + 1 + 8 + 4 + 8
	entrySizeV2      = 32 + 1 + 8 + 4 + 4 + 4
	fanoutSize       = 256 * 4
	kindManifest     = 1
	kindRaw          = 2
	// DefaultPackBlockSize is the size before compression of the blocks of an uploaded pack
	// (StoreOptions.PackBlockSize): large enough that zstd finds the repetition between the
	// messages of a conversation, small enough that reading one object decodes little. 256 KiB
	// at SpeedFastest (DefaultPackLevel) stores loadgen's traffic in the bytes 128 KiB at
	// SpeedDefault did, in about 0.55 of the compression CPU (BENCHMARKS.md, issue 17 offload).
	DefaultPackBlockSize = 256 << 10
	// DefaultPackLevel is the zstd level of pack blocks (StoreOptions.PackLevel).
	DefaultPackLevel = zstd.SpeedFastest
	// PackDir is the folder (under the bucket prefix) holding every pack: packs/<id>.pack.
	PackDir = "packs/"
	// PackSuffix ends every pack key.
	PackSuffix = ".pack"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// objKey names one object: the SHA-256 of the original bytes it stands for, and whether it is a
// manifest (a value stored whole and the same value stored split are two objects).
type objKey struct {
	sum      [32]byte
	manifest bool
}

// name is the object's name inside a pack and in a reference's fragment: sha256/<hex>.zst or
// sha256/<hex>.manifest.zst (the key the object would have had as a single object).
func (k objKey) name() string {
	if k.manifest {
		return ManifestKey(k.sum)
	}
	return ValueKey(k.sum)
}

// packEntry is where one object is in a pack.
//
// In a v1 pack (and a staging file) off and zlen locate the object's record bytes (a zstd frame,
// or the raw bytes when rawRec), and inOff is -1. In a v2 pack they locate the zstd block holding
// the object, and the object is [inOff, inOff+raw) of the decoded block.
type packEntry struct {
	objKey
	off    int64  // offset of the stored bytes (v1) or of the block (v2)
	zlen   uint32 // length of the stored bytes (v1) or of the block (v2)
	raw    int64  // length of the original bytes (of the manifest document for a manifest); -1 unknown
	inOff  int64  // v2: offset in the decoded block; -1 in v1
	rawRec bool   // v1 staging record stored raw (not compressed)
}

// size is what the object weighs in its pack for the dead fraction of Collect: its stored bytes
// in a v1 pack, its original bytes in a v2 pack (its share of a block is not known).
func (e packEntry) size() int64 {
	if e.inOff >= 0 {
		return e.raw
	}
	return int64(e.zlen)
}

// appendRecordHeader appends the recordHeaderSize-byte header of a staging record of zlen stored
// bytes (raw, or a zstd frame) to dst: magic, digest, kind, length and a CRC-32C of those 44 bytes.
func appendRecordHeader(dst []byte, k objKey, zlen int, raw bool) []byte {
	n := len(dst)
	dst = append(dst, recordMagic...)
	dst = append(dst, k.sum[:]...)
	dst = append(dst, kindByte(k.manifest, raw), 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(zlen))
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[n:n+44], castagnoli))
}

// decodeRecordHeader reads a record header; ok is false when h is not one (torn or foreign bytes).
func decodeRecordHeader(h []byte) (k objKey, zlen uint32, raw, ok bool) {
	if len(h) < recordHeaderSize || string(h[:4]) != recordMagic ||
		binary.BigEndian.Uint32(h[44:48]) != crc32.Checksum(h[:44], castagnoli) || h[36] > kindManifest|kindRaw {
		return k, 0, false, false
	}
	copy(k.sum[:], h[4:36])
	k.manifest = h[36]&kindManifest != 0
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

// encodeTrailer returns a v1 trailer+footer for entries (staging files), the trailer starting at offset off.
func encodeTrailer(entries []packEntry, off int64) []byte {
	t := make([]byte, 4, 4+len(entries)*entrySize+footerSize)
	binary.BigEndian.PutUint32(t, uint32(len(entries)))
	for _, e := range entries {
		var b [entrySize]byte
		copy(b[:32], e.sum[:])
		b[32] = kindByte(e.manifest, e.rawRec)
		binary.BigEndian.PutUint64(b[33:41], uint64(e.off))
		binary.BigEndian.PutUint32(b[41:45], e.zlen)
		binary.BigEndian.PutUint64(b[45:53], uint64(e.raw))
		t = append(t, b[:]...)
	}
	return appendFooter(t, off, packMagic)
}

// appendFooter appends the footer of trailer t (starting at offset off) to t.
func appendFooter(t []byte, off int64, magic string) []byte {
	var f [footerSize]byte
	binary.BigEndian.PutUint64(f[0:8], uint64(off))
	binary.BigEndian.PutUint32(f[8:12], uint32(len(t)))
	binary.BigEndian.PutUint32(f[12:16], crc32.Checksum(t, castagnoli))
	copy(f[16:], magic)
	return append(t, f[:]...)
}

// errNoFooter: the bytes do not end with a pack footer (an unsealed segment).
var errNoFooter = errors.New("no pack footer")

// decodeFooter returns the trailer's offset and length from the last footerSize bytes of a pack
// of size bytes, the trailer's checksum, and the layout version (1 or 2).
func decodeFooter(f []byte, size int64) (off int64, n int, crc uint32, version int, err error) {
	switch {
	case len(f) != footerSize:
		return 0, 0, 0, 0, errNoFooter
	case string(f[16:]) == packMagic:
		version = 1
	case string(f[16:]) == packMagicV2:
		version = 2
	default:
		return 0, 0, 0, 0, errNoFooter
	}
	off = int64(binary.BigEndian.Uint64(f[0:8]))
	n = int(binary.BigEndian.Uint32(f[8:12]))
	if off < 0 || off+int64(n)+footerSize != size || n < 4 || version == 2 && (n < fanoutSize || (n-fanoutSize)%entrySizeV2 != 0) {
		return 0, 0, 0, 0, fmt.Errorf("pack footer: trailer at %d+%d does not end a %d byte pack", off, n, size)
	}
	return off, n, binary.BigEndian.Uint32(f[12:16]), version, nil
}

// decodeAnyTrailer parses a whole trailer of either version (checked against crc).
func decodeAnyTrailer(t []byte, crc uint32, trailerOff int64, version int) ([]packEntry, error) {
	if version == 2 {
		return decodeTrailerV2(t, crc, trailerOff)
	}
	return decodeTrailer(t, crc, trailerOff)
}

// decodeTrailer parses a trailer (checked against crc) into its entries.
func decodeTrailer(t []byte, crc uint32, trailerOff int64) ([]packEntry, error) {
	if crc32.Checksum(t, castagnoli) != crc {
		return nil, errors.New("pack trailer: checksum mismatch")
	}
	n := int(binary.BigEndian.Uint32(t[:4]))
	if len(t) != 4+n*entrySize {
		return nil, fmt.Errorf("pack trailer: %d bytes for %d entries", len(t), n)
	}
	out := make([]packEntry, n)
	for i := range out {
		b := t[4+i*entrySize:]
		e := &out[i]
		copy(e.sum[:], b[:32])
		if b[32] > kindManifest|kindRaw {
			return nil, fmt.Errorf("pack trailer: entry %d: kind %d", i, b[32])
		}
		e.manifest = b[32]&kindManifest != 0
		e.rawRec = b[32]&kindRaw != 0
		e.off = int64(binary.BigEndian.Uint64(b[33:41]))
		e.zlen = binary.BigEndian.Uint32(b[41:45])
		e.raw = int64(binary.BigEndian.Uint64(b[45:53]))
		e.inOff = -1
		if e.off < recordHeaderSize || e.off+int64(e.zlen) > trailerOff {
			return nil, fmt.Errorf("pack trailer: entry %d at %d+%d outside the records", i, e.off, e.zlen)
		}
	}
	return out, nil
}

// scanRecords walks the records of an unsealed segment read through r (size bytes) and returns
// the complete ones and the offset where the valid records end (a torn tail starts there).
func scanRecords(r io.ReaderAt, size int64) (entries []packEntry, end int64) {
	return scanRecordsFrom(r, 0, size)
}

// scanRecordsFrom is scanRecords starting at a record boundary start.
func scanRecordsFrom(r io.ReaderAt, start, size int64) (entries []packEntry, end int64) {
	var h [recordHeaderSize]byte
	end = start
	for off := start; off+recordHeaderSize <= size; {
		if _, err := r.ReadAt(h[:], off); err != nil {
			break
		}
		k, zlen, raw, ok := decodeRecordHeader(h[:])
		if !ok || off+recordHeaderSize+int64(zlen) > size {
			break
		}
		e := packEntry{objKey: k, off: off + recordHeaderSize, zlen: zlen, raw: -1, inOff: -1, rawRec: raw}
		if raw {
			e.raw = int64(zlen)
		}
		entries = append(entries, e)
		off += recordHeaderSize + int64(zlen)
		end = off
	}
	return entries, end
}

// packKey is the bucket key (without the bucket prefix) of pack id.
func packKey(id string) string { return PackDir + id + PackSuffix }

// validPackID: ids are what newPackID makes (hex and '-'); anything else in a reference or a
// manifest is refused, so that a pack id can never name a path outside the pack folder.
func validPackID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// parsePackRef splits a pack reference's key and fragment: key ".../packs/<id>.pack" and
// fragment "sha256/<hex>.zst" or "sha256/<hex>.manifest.zst". ok is false for other keys.
func parsePackRef(key, fragment string) (prefix, id string, k objKey, ok bool, err error) {
	i := strings.LastIndex(key, PackDir)
	if i < 0 || !strings.HasSuffix(key, PackSuffix) {
		return "", "", k, false, nil
	}
	id = strings.TrimSuffix(key[i+len(PackDir):], PackSuffix)
	if !validPackID(id) {
		return "", "", k, true, fmt.Errorf("payloadref: %q is not a pack id", id)
	}
	sum, manifest, err := ParseKey(fragment)
	if err != nil {
		return "", "", k, true, fmt.Errorf("payloadref: pack reference fragment %q: %w", fragment, err)
	}
	return key[:i], id, objKey{sum, manifest}, true, nil
}

// hexSum parses a 64-digit hex SHA-256.
func hexSum(s string) (sum [32]byte, err error) {
	if len(s) != 64 {
		return sum, fmt.Errorf("bad digest %q", s)
	}
	_, err = hex.Decode(sum[:], []byte(s))
	return sum, err
}
