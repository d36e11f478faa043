package sqlitestore

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// The warm tier's attributes column (schema version 3): the JSON object text of a summary's
// attributes as TEXT when it is short (compression would not pay for its frame), else one zstd
// frame of it as a BLOB. Version 2 rows hold the text; decodeAttrs reads both, told apart by the
// first byte ('{' for JSON, the frame magic 28 B5 2F FD otherwise).

// attrsMinCompress is the shortest JSON text stored compressed: below it a zstd frame (header,
// block header, checksum-free) saves nothing.
const attrsMinCompress = 64

// zstdMagic starts every zstd frame (RFC 8878 section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

var (
	attrsEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true),
		zstd.WithZeroFrames(true))
	attrsDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20))
)

// encodeAttrs is the stored form of a summary's attributes JSON text.
func encodeAttrs(js string) any {
	if len(js) < attrsMinCompress {
		return js
	}
	return attrsEncoder.EncodeAll([]byte(js), make([]byte, 0, len(js)/2))
}

// decodeAttrs returns the JSON text of a stored attributes column.
func decodeAttrs(stored []byte) (string, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return string(stored), nil
	}
	out, err := attrsDecoder.DecodeAll(stored, nil)
	if err != nil {
		return "", fmt.Errorf("decode zstd attributes: %w", err)
	}
	return string(out), nil
}
