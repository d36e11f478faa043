package payloadref

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// Pack file layout (see the package doc, "Packs"). All integers are big-endian.
//
//	record*  trailer  footer
//
//	record  = header (recordHeaderSize bytes) + zstd frame
//	header  = "RAOB" | SHA-256 (32) | kind (1: 0 value, 1 manifest) | 3 zero bytes |
//	          frame length (uint32) | CRC-32C of the 44 bytes before it (uint32)
//	trailer = entryCount (uint32) | entry*      entry = SHA-256 (32) | kind (1) |
//	          frame offset (uint64) | frame length (uint32) | original length (uint64)
//	footer  = trailer offset (uint64) | trailer length (uint32) | CRC-32C of the trailer (uint32) |
//	          "RAPACK01"
//
// The headers make an unsealed segment (the open one in the staging area, or one left by a crash)
// readable by a scan; the trailer makes a sealed pack readable with two ranged reads (footer, then
// trailer) before the object's own ranged read, as in git and restic packs.
const (
	recordMagic      = "RAOB"
	packMagic        = "RAPACK01"
	recordHeaderSize = 48
	footerSize       = 24
	entrySize        = 32 + 1 + 8 + 4 + 8
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
type packEntry struct {
	objKey
	off  int64  // offset of the zstd frame
	zlen uint32 // length of the zstd frame
	raw  int64  // length of the original bytes (of the manifest document for a manifest)
}

func encodeRecordHeader(k objKey, zlen int) []byte {
	h := make([]byte, recordHeaderSize)
	copy(h, recordMagic)
	copy(h[4:36], k.sum[:])
	if k.manifest {
		h[36] = 1
	}
	binary.BigEndian.PutUint32(h[40:44], uint32(zlen))
	binary.BigEndian.PutUint32(h[44:48], crc32.Checksum(h[:44], castagnoli))
	return h
}

// decodeRecordHeader reads a record header; ok is false when h is not one (torn or foreign bytes).
func decodeRecordHeader(h []byte) (k objKey, zlen uint32, ok bool) {
	if len(h) < recordHeaderSize || string(h[:4]) != recordMagic ||
		binary.BigEndian.Uint32(h[44:48]) != crc32.Checksum(h[:44], castagnoli) || h[36] > 1 {
		return k, 0, false
	}
	copy(k.sum[:], h[4:36])
	k.manifest = h[36] == 1
	return k, binary.BigEndian.Uint32(h[40:44]), true
}

// encodeTrailer returns trailer+footer for entries, the trailer starting at offset off.
func encodeTrailer(entries []packEntry, off int64) []byte {
	t := make([]byte, 4, 4+len(entries)*entrySize+footerSize)
	binary.BigEndian.PutUint32(t, uint32(len(entries)))
	for _, e := range entries {
		var b [entrySize]byte
		copy(b[:32], e.sum[:])
		if e.manifest {
			b[32] = 1
		}
		binary.BigEndian.PutUint64(b[33:41], uint64(e.off))
		binary.BigEndian.PutUint32(b[41:45], e.zlen)
		binary.BigEndian.PutUint64(b[45:53], uint64(e.raw))
		t = append(t, b[:]...)
	}
	tl := len(t)
	var f [footerSize]byte
	binary.BigEndian.PutUint64(f[0:8], uint64(off))
	binary.BigEndian.PutUint32(f[8:12], uint32(tl))
	binary.BigEndian.PutUint32(f[12:16], crc32.Checksum(t, castagnoli))
	copy(f[16:], packMagic)
	return append(t, f[:]...)
}

// errNoFooter: the bytes do not end with a pack footer (an unsealed segment).
var errNoFooter = errors.New("no pack footer")

// decodeFooter returns the trailer's offset and length from the last footerSize bytes of a pack
// of size bytes, and the trailer's checksum.
func decodeFooter(f []byte, size int64) (off int64, n int, crc uint32, err error) {
	if len(f) != footerSize || string(f[16:]) != packMagic {
		return 0, 0, 0, errNoFooter
	}
	off = int64(binary.BigEndian.Uint64(f[0:8]))
	n = int(binary.BigEndian.Uint32(f[8:12]))
	if off < 0 || off+int64(n)+footerSize != size || n < 4 {
		return 0, 0, 0, fmt.Errorf("pack footer: trailer at %d+%d does not end a %d byte pack", off, n, size)
	}
	return off, n, binary.BigEndian.Uint32(f[12:16]), nil
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
		e.manifest = b[32] == 1
		e.off = int64(binary.BigEndian.Uint64(b[33:41]))
		e.zlen = binary.BigEndian.Uint32(b[41:45])
		e.raw = int64(binary.BigEndian.Uint64(b[45:53]))
		if e.off < recordHeaderSize || e.off+int64(e.zlen) > trailerOff {
			return nil, fmt.Errorf("pack trailer: entry %d at %d+%d outside the records", i, e.off, e.zlen)
		}
	}
	return out, nil
}

// scanRecords walks the records of an unsealed segment read through r (size bytes) and returns
// the complete ones and the offset where the valid records end (a torn tail starts there).
func scanRecords(r io.ReaderAt, size int64) (entries []packEntry, end int64) {
	var h [recordHeaderSize]byte
	for off := int64(0); off+recordHeaderSize <= size; {
		if _, err := r.ReadAt(h[:], off); err != nil {
			break
		}
		k, zlen, ok := decodeRecordHeader(h[:])
		if !ok || off+recordHeaderSize+int64(zlen) > size {
			break
		}
		entries = append(entries, packEntry{objKey: k, off: off + recordHeaderSize, zlen: zlen, raw: -1})
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

// buildPack returns a whole pack holding the given records (header+frame each, in order).
func buildPack(recs [][]byte, keys []objKey, raws []int64) ([]byte, []packEntry) {
	var buf bytes.Buffer
	entries := make([]packEntry, len(recs))
	for i, r := range recs {
		off := int64(buf.Len())
		buf.Write(r)
		entries[i] = packEntry{objKey: keys[i], off: off + recordHeaderSize, zlen: uint32(len(r) - recordHeaderSize), raw: raws[i]}
	}
	buf.Write(encodeTrailer(entries, int64(buf.Len())))
	return buf.Bytes(), entries
}
