package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/klauspost/compress/zstd"
)

// The warm tier's attributes column: the JSON object text of a summary's attributes as TEXT
// when it is short (a frame would not pay for itself) or written before version 3, else one zstd
// frame of it as a BLOB, made by the file's codec (codec.go): without dictionary until the
// codec has seen trainSpans summaries, then with the dictionary trained on them, whose id the
// frame header carries (RFC 8878 section 3.1.1.1, Dictionary_ID). decodeAttrs reads every form,
// told apart by the first byte ('{' for JSON, the frame magic 28 B5 2F FD otherwise).

// attrsMinCompress is the shortest JSON text stored compressed.
const attrsMinCompress = 32

// zstdMagic starts every zstd frame (RFC 8878 section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// warmSource trains the attributes dictionary on the file's first summaries.
var warmSource = codecSource{
	samplesQuery: `SELECT attributes FROM span_summaries ORDER BY rowid LIMIT ?`,
	decodeRow: func(ctx context.Context, c *otlpCodec, rows *sql.Rows) ([]byte, error) {
		var stored []byte
		if err := rows.Scan(&stored); err != nil {
			return nil, err
		}
		return decodeAttrsWith(ctx, c, stored)
	},
	sample: warmAttrsSample,
}

// warmAttrsSample is the training sample of a summary's attributes JSON: its keys, with the
// values replaced except those of dictKeys (names of software, models and operations), so the
// dictionary, which no erasure touches, holds no value a person or session could be named by.
// A replaced string becomes random hexadecimal of its length (at most 64 characters), numbers 0:
// the samples then hold literals shaped like the identifiers they stand for, which the entropy
// tables need (a dictionary cannot be built from samples its history matches whole).
func warmAttrsSample(plain []byte) []byte {
	var m map[string]any
	if json.Unmarshal(plain, &m) != nil {
		return nil
	}
	for k, v := range m {
		if !dictKeys[k] {
			m[k] = standIn(v)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// standIn replaces the strings of a decoded JSON value by random hexadecimal of their length
// (bounded) and its numbers by 0.
func standIn(x any) any {
	switch t := x.(type) {
	case string:
		const hexDigits = "0123456789abcdef"
		b := make([]byte, min(len(t), 64))
		for i := range b {
			b[i] = hexDigits[rand.IntN(len(hexDigits))]
		}
		return string(b)
	case float64:
		return 0
	case []any:
		for i, e := range t {
			t[i] = standIn(e)
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = standIn(e)
		}
		return t
	}
	return x
}

// encodeAttrs is the stored form of a summary's attributes JSON text; dst is reused for the
// frame (the second result, to pass back in).
func (w *WarmDB) encodeAttrs(dst []byte, js string) (any, []byte) {
	if len(js) < attrsMinCompress {
		return js, dst
	}
	out, _, _ := w.codec.encode(dst, []byte(js), true)
	return out, out
}

// decodeAttrs returns the JSON text of a stored attributes column.
func (w *WarmDB) decodeAttrs(ctx context.Context, stored []byte) (string, error) {
	out, err := decodeAttrsWith(ctx, w.codec, stored)
	return string(out), err
}

func decodeAttrsWith(ctx context.Context, c *otlpCodec, stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return stored, nil
	}
	var h zstd.Header
	if err := h.Decode(stored); err != nil {
		return nil, fmt.Errorf("decode zstd attributes: %w", err)
	}
	codec, dict := int64(CodecZstd), int64(0)
	if h.DictionaryID != 0 {
		codec, dict = CodecZstdDict, int64(h.DictionaryID)
	}
	out, err := c.decode(ctx, codec, dict, stored)
	if err != nil {
		return nil, fmt.Errorf("decode zstd attributes: %w", err)
	}
	return out, nil
}
