// SPDX-License-Identifier: Apache-2.0

package sqlitestore

// # Span frames (schema version 7)
//
// A span row alone is small (about 2.5 KB of protobuf on the bench), so compressing each row as
// its own zstd frame pays the encoder's per-frame setup for every span: with a dictionary the
// encoder restores its 256 KiB match table and the dictionary's history for each frame (klauspost
// fastEncoderDict.Reset), which was a third of the hot write. The spans of one trace that arrive
// in one request are instead compressed together as one frame, stored once in span_frames; each
// of their span rows points into it:
//
//	span_frames: one row per frame, never shared by two traces
//	  id     INTEGER  primary key
//	  codec  INTEGER  CodecZstd or CodecZstdDict (codec.go), as otlp_codec of a row
//	  dict   INTEGER  zstd_dicts.id for CodecZstdDict, else 0
//	  spans  INTEGER  span rows pointing into it; the frame is deleted with the last of them
//	  data   BLOB     the frame: the concatenated ExportTraceServiceRequest of each span
//
//	a span row with otlp_codec 3 (CodecFrame): otlp_dict is the span_frames id, otlp is two
//	unsigned varints (encoding/binary), the offset and the length of the span's protobuf in the
//	frame's decoded bytes.
//
// A trace's spans of one request are one frame up to frameMaxRaw bytes of protobuf (so reading
// one run decodes little more than the run); a span alone in its request keeps its own row frame
// (CodecZstdDict or CodecZstd). A trigger keeps span_frames exact: a deleted span row (expiry,
// erasure, a retried span being replaced) decrements its frame's count and deletes the frame with
// its last row, so an erasure (secure_delete) removes the frame's bytes with the run. The frames
// of one request also compress better than the rows alone (the resource, scope and the run's
// repeated attributes are written once per frame).

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	// CodecFrame marks a span row whose protobuf is a slice of a span_frames row.
	CodecFrame = 3
	// frameMaxRaw bounds a frame's decoded bytes: a larger group of one trace's spans starts
	// another frame, so a read of one run decodes at most this much more than it needs.
	frameMaxRaw = 256 << 10
)

const framesDDL = `
CREATE TABLE IF NOT EXISTS span_frames (
  id    INTEGER NOT NULL PRIMARY KEY,
  codec INTEGER NOT NULL,
  dict  INTEGER NOT NULL,
  spans INTEGER NOT NULL,
  data  BLOB    NOT NULL
);
CREATE TRIGGER IF NOT EXISTS spans_frames_delete AFTER DELETE ON spans WHEN old.otlp_codec = 3 BEGIN
  UPDATE span_frames SET spans = spans - 1 WHERE id = old.otlp_dict;
  DELETE FROM span_frames WHERE id = old.otlp_dict AND spans <= 0;
END;
`

// frameRef is the otlp column of a CodecFrame row: the span's offset and length in the frame.
func frameRef(dst []byte, off, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(off))
	return binary.AppendUvarint(dst, uint64(n))
}

// parseFrameRef reads a CodecFrame row's otlp column.
func parseFrameRef(b []byte) (off, n uint64, err error) {
	off, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, 0, errors.New("bad span frame reference")
	}
	n, j := binary.Uvarint(b[k:])
	if j <= 0 || k+j != len(b) {
		return 0, 0, errors.New("bad span frame reference")
	}
	return off, n, nil
}

// frameReader decodes span frames for one read, each frame once: from stored (the frames read
// with the rows, DB.spanRows) or else read with q.
type frameReader struct {
	c      *otlpCodec
	stored map[int64]storedRow
	q      querier
	frames map[int64][]byte
}

// span returns the protobuf of a span row stored as codec, dictID and buf: a slice of its frame
// for CodecFrame, else the row decoded alone.
func (r *frameReader) span(ctx context.Context, codec, dictID int64, buf []byte) ([]byte, error) {
	if codec != CodecFrame {
		return r.c.decode(ctx, codec, dictID, buf)
	}
	off, n, err := parseFrameRef(buf)
	if err != nil {
		return nil, err
	}
	raw, ok := r.frames[dictID]
	if !ok {
		var fcodec, fdict int64
		var data []byte
		if f, ok := r.stored[dictID]; ok || r.q == nil {
			if !ok {
				return nil, fmt.Errorf("span frame %d: %w", dictID, sql.ErrNoRows)
			}
			fcodec, fdict, data = f.codec, f.dict, f.buf
		} else if err := r.query(ctx, dictID, &fcodec, &fdict, &data); err != nil {
			return nil, err
		}
		var err error
		if raw, err = r.c.decode(ctx, fcodec, fdict, data); err != nil {
			return nil, fmt.Errorf("span frame %d: %w", dictID, err)
		}
		if r.frames == nil {
			r.frames = map[int64][]byte{}
		}
		r.frames[dictID] = raw
	}
	if off+n > uint64(len(raw)) {
		return nil, fmt.Errorf("span frame %d: span at %d+%d beyond its %d bytes", dictID, off, n, len(raw))
	}
	return raw[off : off+n : off+n], nil
}

// query reads the span frame id with r.q.
func (r *frameReader) query(ctx context.Context, id int64, fcodec, fdict *int64, data *[]byte) error {
	rows, err := r.q.QueryContext(ctx, `SELECT codec, dict, data FROM span_frames WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("span frame %d: %w", id, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("span frame %d: %w", id, err)
		}
		return fmt.Errorf("span frame %d: %w", id, sql.ErrNoRows)
	}
	if err := rows.Scan(fcodec, fdict, data); err != nil {
		return fmt.Errorf("span frame %d: %w", id, err)
	}
	return nil
}
