package sqlitestore

import (
	"bytes"
	"fmt"
)

// The warm tier's attributes column (schema version 3): the JSON object text of a summary's
// attributes as TEXT when it is short (compression would not pay for its frame), else one zstd
// frame of it as a BLOB, made by the package's zstd codec (codec.go, plainCodec). Version 2 rows
// hold the text; decodeAttrs reads both, told apart by the first byte ('{' for JSON, the frame
// magic 28 B5 2F FD otherwise).

// attrsMinCompress is the shortest JSON text stored compressed: below it a zstd frame (its
// header and block header) saves nothing.
const attrsMinCompress = 64

// zstdMagic starts every zstd frame (RFC 8878 section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// encodeAttrs is the stored form of a summary's attributes JSON text.
func encodeAttrs(js string) any {
	if len(js) < attrsMinCompress {
		return js
	}
	enc, _ := plainCodec()
	return enc.EncodeAll([]byte(js), make([]byte, 0, len(js)/2))
}

// decodeAttrs returns the JSON text of a stored attributes column.
func decodeAttrs(stored []byte) (string, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return string(stored), nil
	}
	_, dec := plainCodec()
	out, err := dec.DecodeAll(stored, nil)
	if err != nil {
		return "", fmt.Errorf("decode zstd attributes: %w", err)
	}
	return string(out), nil
}
