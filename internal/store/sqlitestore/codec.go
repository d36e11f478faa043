// SPDX-License-Identifier: Apache-2.0

package sqlitestore

// # The otlp column's encoding (schema version 4)
//
// Each spans and logs row records how its otlp column is encoded:
//
//	otlp_codec  INTEGER  0 (CodecRaw): the OTLP protobuf as it is (every row written before
//	                     version 4); 1 (CodecZstd): one zstd frame of it, without dictionary;
//	                     2 (CodecZstdDict): one zstd frame made with the dictionary otlp_dict
//	otlp_dict   INTEGER  zstd_dicts.id of the dictionary (CodecZstdDict), else 0
//
//	zstd_dicts: the file's zstd dictionaries (RFC 8878 section 5 format), never deleted while a
//	row may use them
//	  id                 INTEGER  primary key; also the dictionary ID in the frames made with it
//	  dict               BLOB     the dictionary
//	  samples            INTEGER  spans it was trained on
//	  created_unix_nano  INTEGER
//
// A span row is small (2-3 KB, mostly the resource, the scope and attribute keys that every span
// of the file repeats), so compressing each row alone gains little (about 0.55 of the bytes with
// zstd) while a dictionary trained on the file's own first spans holds the repeated parts (about
// 0.25; measured on the bench's hot.db, 48,680 spans). The writer compresses with plain zstd until
// it has seen trainSpans spans, then trains a dictionary on them (zstd.BuildDict: the last
// dictHistory bytes of the samples as history, their statistics for the entropy tables), stores
// it in zstd_dicts and uses it from then on. The samples are the spans with their values blanked
// (dictSample): a dictionary is never erased, so it must not hold what an erasure removes; on the
// bench's spans that costs ratio (0.44 instead of 0.25, the loadgen's messages draw on a small
// vocabulary a content dictionary learns). Readers decode every codec: rows written before the
// dictionary, and before version 4, stay as they are.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The otlp_codec values.
const (
	CodecRaw       = 0 // OTLP protobuf, not compressed
	CodecZstd      = 1 // a zstd frame without dictionary
	CodecZstdDict  = 2 // a zstd frame made with the dictionary otlp_dict (zstd_dicts.id)
	trainSpans     = 1000
	dictHistory    = 32 << 10  // bytes of sample history in a dictionary: the encoder copies it per row; on the bench spans 32 KiB compresses as well as 100 KiB (0.406 against 0.405) at two thirds of the CPU
	sampleMaxBytes = 16 << 10  // only a sample's beginning matters to the dictionary
	maxDecoded     = 256 << 20 // a frame claiming more is refused (the largest OTLP request the receiver takes is far smaller)
)

const dictsDDL = `
CREATE TABLE IF NOT EXISTS zstd_dicts (
  id                INTEGER NOT NULL PRIMARY KEY,
  dict              BLOB    NOT NULL,
  samples           INTEGER NOT NULL,
  created_unix_nano INTEGER NOT NULL
);
`

// plainCodec is the process's dictionary-less encoder and decoder: both are safe for concurrent
// use and keep a pool of states of their own (EncodeAll, DecodeAll).
var plainCodec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(err) // only invalid options fail
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		panic(err)
	}
	return enc, dec
})

// codecSource is what a codec trains on: the file's first stored values and how a value becomes
// a training sample.
type codecSource struct {
	// samplesQuery selects the file's first stored values in write order, at most ? (trainSpans)
	// rows; decodeRow scans one of its rows and returns the value's plain bytes, decoding it
	// with c where it is stored encoded.
	samplesQuery string
	decodeRow    func(ctx context.Context, c *otlpCodec, rows *sql.Rows) ([]byte, error)
	// sample returns the training sample of a plain value: what of it a dictionary may keep
	// (nil: none). It must keep no value an erasure has to remove (see dictSample).
	sample func(plain []byte) []byte
}

// hotSource trains on the hot file's spans (their OTLP protobuf, values blanked: dictSample).
var hotSource = codecSource{
	samplesQuery: `SELECT s.otlp_codec, s.otlp_dict, s.otlp, COALESCE(f.codec, 0), COALESCE(f.dict, 0), f.data
	  FROM spans s LEFT JOIN span_frames f ON s.otlp_codec = 3 AND f.id = s.otlp_dict ORDER BY s.rowid LIMIT ?`,
	decodeRow: func(ctx context.Context, c *otlpCodec, rows *sql.Rows) ([]byte, error) {
		var codec, dictID, fcodec, fdict int64
		var buf, frame []byte
		if err := rows.Scan(&codec, &dictID, &buf, &fcodec, &fdict, &frame); err != nil {
			return nil, err
		}
		if codec != CodecFrame {
			return c.decode(ctx, codec, dictID, buf)
		}
		off, n, err := parseFrameRef(buf)
		if err != nil {
			return nil, err
		}
		raw, err := c.decode(ctx, fcodec, fdict, frame)
		if err != nil {
			return nil, fmt.Errorf("span frame %d: %w", dictID, err)
		}
		if off+n > uint64(len(raw)) { // also a frame that is missing (NULL)
			return nil, fmt.Errorf("span frame %d: span at %d+%d beyond its %d bytes", dictID, off, n, len(raw))
		}
		return raw[off : off+n : off+n], nil
	},
	sample: dictSample,
}

// otlpCodec encodes and decodes one file's stored values (the hot file's otlp columns). Safe for
// concurrent use.
type otlpCodec struct {
	db       *sql.DB
	readOnly bool
	now      func() time.Time
	src      codecSource

	mu      sync.RWMutex
	encID   int64         // dictionary in use for writing (0: none yet)
	enc     *zstd.Encoder // with that dictionary
	decs    map[int64]*zstd.Decoder
	samples [][]byte // the first spans' protobuf, until a dictionary is trained
	trained bool     // a dictionary exists (or training failed: plain zstd from then on)
}

// newCodec loads the dictionaries of db and the newest one for writing (a file opened for
// writing) or nothing (read-only: dictionaries are loaded when a row needs them). A writable file
// without dictionary takes its first values (src, up to trainSpans) as the training samples.
func newCodec(ctx context.Context, db *sql.DB, readOnly bool, now func() time.Time, src codecSource) (*otlpCodec, error) {
	c := &otlpCodec{db: db, readOnly: readOnly, now: now, src: src, decs: map[int64]*zstd.Decoder{}}
	if readOnly {
		return c, nil
	}
	// Every dictionary is loaded now: the writer's one connection cannot look one up while it
	// reads rows.
	dicts, err := db.QueryContext(ctx, `SELECT id, dict FROM zstd_dicts ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("load zstd dictionaries: %w", err)
	}
	defer dicts.Close()
	var last int64
	var lastDict []byte
	for dicts.Next() {
		if err := dicts.Scan(&last, &lastDict); err != nil {
			return nil, err
		}
		if err := c.addDecoder(last, lastDict); err != nil {
			return nil, err
		}
	}
	if err := dicts.Err(); err != nil {
		return nil, err
	}
	dicts.Close()
	if last > 0 {
		return c, c.useDict(last, lastDict)
	}
	rows, err := db.QueryContext(ctx, src.samplesQuery, trainSpans)
	if err != nil {
		return nil, fmt.Errorf("read training samples: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if raw, err := src.decodeRow(ctx, c, rows); err == nil {
			c.addSample(raw)
		}
	}
	return c, rows.Err()
}

// useDict makes dict (zstd_dicts.id id) the dictionary of new rows.
func (c *otlpCodec) useDict(id int64, dict []byte) error {
	if err := c.addDecoder(id, dict); err != nil {
		return err
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderDict(dict))
	if err != nil {
		return fmt.Errorf("zstd dictionary %d: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.encID, c.enc, c.trained, c.samples = id, enc, true, nil
	return nil
}

// addSample keeps the training sample of raw (dictSample, its beginning) while there is no
// dictionary.
func (c *otlpCodec) addSample(raw []byte) {
	if c.trained || len(c.samples) >= trainSpans {
		return
	}
	if s := c.src.sample(raw); len(s) > 0 {
		c.samples = append(c.samples, s[:min(len(s), sampleMaxBytes)])
	}
}

// hasDict reports whether new rows are encoded with a dictionary.
func (c *otlpCodec) hasDict() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.enc != nil
}

// sampleRaw keeps raw (a span's protobuf) as a training sample while there is no dictionary.
func (c *otlpCodec) sampleRaw(raw []byte) {
	c.mu.Lock()
	c.addSample(raw)
	c.mu.Unlock()
}

// encode returns the stored form of the protobuf raw, appended to dst, with its codec and
// dictionary id; before a dictionary exists it also keeps raw as a training sample.
func (c *otlpCodec) encode(dst, raw []byte, sample bool) (out []byte, codec, dictID int64) {
	c.mu.RLock()
	enc, id := c.enc, c.encID
	c.mu.RUnlock()
	if enc != nil {
		return enc.EncodeAll(raw, dst), CodecZstdDict, id
	}
	if sample {
		c.mu.Lock()
		c.addSample(raw)
		c.mu.Unlock()
	}
	plain, _ := plainCodec()
	return plain.EncodeAll(raw, dst), CodecZstd, 0
}

// maybeTrain trains the file's dictionary once trainSpans samples are in, stores it in its own
// transaction and uses it for the rows written after. Training that fails leaves plain zstd for
// this process; a failure to store the dictionary keeps the samples, so a later write tries again.
// Either way the rows already written stay readable: callers need not fail a committed write.
func (c *otlpCodec) maybeTrain(ctx context.Context) error {
	c.mu.Lock()
	if c.trained || c.readOnly || len(c.samples) < trainSpans {
		c.mu.Unlock()
		return nil
	}
	samples := c.samples
	c.trained = true // no other training meanwhile
	c.mu.Unlock()
	retry := func(err error) error {
		c.mu.Lock()
		c.trained = false
		c.mu.Unlock()
		return err
	}

	var id int64
	if err := c.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM zstd_dicts`).Scan(&id); err != nil {
		return retry(fmt.Errorf("zstd dictionary: %w", err))
	}
	dict, err := buildDict(uint32(id), samples)
	if err == nil {
		err = checkDict(dict, samples[len(samples)-1])
	}
	if err != nil {
		c.mu.Lock()
		c.samples = nil
		c.mu.Unlock()
		return fmt.Errorf("zstd dictionary: %w (rows keep plain zstd)", err)
	}
	if _, err := c.db.ExecContext(ctx, `INSERT INTO zstd_dicts (id, dict, samples, created_unix_nano) VALUES (?,?,?,?)`,
		id, dict, len(samples), c.now().UnixNano()); err != nil {
		return retry(fmt.Errorf("store zstd dictionary: %w", err))
	}
	return c.useDict(id, dict)
}

// checkDict verifies that dict encodes and decodes sample, before it is stored (a stored
// dictionary that does not load would keep the file from opening).
func checkDict(dict, sample []byte) error {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderDict(dict), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	defer enc.Close()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(dict), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	back, err := dec.DecodeAll(enc.EncodeAll(sample, nil), nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(back, sample) {
		return errors.New("the dictionary does not round-trip a sample")
	}
	return nil
}

// buildDict trains a zstd dictionary with the given id on samples: the last dictHistory bytes of
// their concatenation are its history (the content frames refer back into), all of them shape
// its entropy tables.
func buildDict(id uint32, samples [][]byte) ([]byte, error) {
	n, size := len(samples), 0 // the newest samples that fit, whole
	for n > 0 && size+len(samples[n-1]) <= dictHistory {
		n--
		size += len(samples[n])
	}
	hist := make([]byte, 0, size)
	for _, s := range samples[n:] {
		hist = append(hist, s...)
	}
	if len(hist) < 8 {
		return nil, errors.New("too few sample bytes")
	}
	return zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: samples, History: hist,
		Offsets: [3]int{1, 4, 8}, Level: zstd.SpeedFastest})
}

// decode returns the OTLP protobuf of a stored otlp column with its codec and dictionary id.
func (c *otlpCodec) decode(ctx context.Context, codec, dictID int64, buf []byte) ([]byte, error) {
	switch codec {
	case CodecRaw:
		return buf, nil
	case CodecZstd:
		_, dec := plainCodec()
		return dec.DecodeAll(buf, nil)
	case CodecZstdDict:
		dec, err := c.decoder(ctx, dictID)
		if err != nil {
			return nil, err
		}
		return dec.DecodeAll(buf, nil)
	}
	return nil, fmt.Errorf("unknown otlp_codec %d", codec)
}

// decoder returns the decoder of dictionary id, loading it from zstd_dicts the first time (a
// reader opened before the writer trained it finds it then).
func (c *otlpCodec) decoder(ctx context.Context, id int64) (*zstd.Decoder, error) {
	c.mu.RLock()
	dec := c.decs[id]
	c.mu.RUnlock()
	if dec != nil {
		return dec, nil
	}
	var dict []byte
	if err := c.db.QueryRowContext(ctx, `SELECT dict FROM zstd_dicts WHERE id = ?`, id).Scan(&dict); err != nil {
		return nil, fmt.Errorf("zstd dictionary %d: %w", id, err)
	}
	if err := c.addDecoder(id, dict); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.decs[id], nil
}

// addDecoder adds the decoder of dictionary id (once).
func (c *otlpCodec) addDecoder(id int64, dict []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decs[id] != nil {
		return nil
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(dict), zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		return fmt.Errorf("zstd dictionary %d: %w", id, err)
	}
	c.decs[id] = dec
	return nil
}

// close releases the decoders' goroutines and the encoder.
func (c *otlpCodec) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.decs {
		d.Close()
	}
	c.decs = nil
	if c.enc != nil {
		c.enc.Close()
	}
}

// dictKeys are the attributes whose values a dictionary sample keeps: they name software and
// operations (OpenTelemetry semantic conventions: service, telemetry.sdk, gen_ai), never a person
// or a session. Every other value is blanked in the samples.
var dictKeys = map[string]bool{
	"service.name": true, "service.version": true, "service.namespace": true,
	"telemetry.sdk.name": true, "telemetry.sdk.language": true, "telemetry.sdk.version": true,
	"telemetry.distro.name": true, "telemetry.distro.version": true,
	"deployment.environment": true, "deployment.environment.name": true,
	"process.runtime.name": true, "process.runtime.version": true, "os.type": true, "host.arch": true,
	"gen_ai.operation.name": true, "gen_ai.provider.name": true, "gen_ai.system": true,
	"gen_ai.request.model": true, "gen_ai.response.model": true, "gen_ai.response.finish_reasons": true,
	"gen_ai.tool.name": true, "gen_ai.tool.type": true, "gen_ai.output.type": true,
}

// jsonEnumKeys are the keys of the GenAI message JSON (gen_ai.input.messages and the like) whose
// string values a sample keeps: enumerations of the semantic conventions' message schema.
var jsonEnumKeys = map[string]bool{"role": true, "type": true, "finish_reason": true}

// dictSample returns the training sample of a stored span (its OTLP protobuf): the same request
// with the value of every attribute outside dictKeys blanked (strings emptied, numbers zeroed,
// JSON text reduced to its keys and enumerations), the span name, status message and trace
// states emptied. A dictionary's history is sample bytes, and zstd_dicts outlives any erasure: so
// a dictionary holds the structure that every span repeats (the resource and scope attributes of
// dictKeys, the scope name, event names, attribute keys, the message schema) and no value a
// person or session could be named by. It returns nil for a
// buffer that does not decode.
func dictSample(raw []byte) []byte {
	var um ptrace.ProtoUnmarshaler
	td, err := um.UnmarshalTraces(raw)
	if err != nil {
		return nil
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		blankAttrs(rs.Resource().Attributes())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			blankAttrs(ss.Scope().Attributes())
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				blankAttrs(s.Attributes())
				s.SetName("") // names like "invoke_agent {gen_ai.agent.name}" carry values
				s.TraceState().FromRaw("")
				s.Status().SetMessage("")
				for e := 0; e < s.Events().Len(); e++ {
					blankAttrs(s.Events().At(e).Attributes())
				}
				for l := 0; l < s.Links().Len(); l++ {
					s.Links().At(l).TraceState().FromRaw("")
					blankAttrs(s.Links().At(l).Attributes())
				}
			}
		}
	}
	var m ptrace.ProtoMarshaler
	out, err := m.MarshalTraces(td)
	if err != nil {
		return nil
	}
	return out
}

func blankAttrs(m pcommon.Map) {
	m.Range(func(k string, v pcommon.Value) bool {
		if !dictKeys[k] {
			blankValue(v)
		}
		return true
	})
}

func blankValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		if len(s) > 1 && (s[0] == '{' || s[0] == '[') {
			var x any
			if json.Unmarshal([]byte(s), &x) == nil {
				if b, err := json.Marshal(blankJSON(x, false)); err == nil {
					v.SetStr(string(b))
					return
				}
			}
		}
		v.SetStr("")
	case pcommon.ValueTypeInt:
		v.SetInt(0)
	case pcommon.ValueTypeDouble:
		v.SetDouble(0)
	case pcommon.ValueTypeBytes:
		v.SetEmptyBytes()
	case pcommon.ValueTypeMap:
		v.Map().Range(func(_ string, e pcommon.Value) bool { blankValue(e); return true })
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			blankValue(v.Slice().At(i))
		}
	}
}

// blankJSON empties the strings and zeroes the numbers of a decoded JSON value, keeping object
// keys and the strings under jsonEnumKeys (keep: x is the value of such a key).
func blankJSON(x any, keep bool) any {
	switch t := x.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = blankJSON(e, jsonEnumKeys[k])
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = blankJSON(e, false)
		}
		return t
	case string:
		if keep && len(t) <= 32 {
			return t
		}
		return ""
	case float64:
		return 0
	}
	return x
}
