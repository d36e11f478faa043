// SPDX-License-Identifier: Apache-2.0

package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Records is what a warm or cold tier stores of one or more requests, built before the tier's
// sending queue so the queue persists these records instead of the spans they come from (README
// of the tiered exporter, "Persist once"): span summaries and key events (warm: Summarize,
// AlertEvents), or session partials (cold: Partials).
type Records struct {
	Spans    []SpanSummary
	Events   []KeyEvent
	Partials []SessionPartial
}

// Items is the number of spans and log records the records stand for: one per span summary and
// key event, and the spans and alerts each partial counts. It is what a sending queue's `items`
// sizer counts, so batch sizes mean what they meant for the requests.
func (r Records) Items() int {
	n := len(r.Spans) + len(r.Events)
	for _, p := range r.Partials {
		n += int(p.Spans + p.Alerts)
	}
	return n
}

// Empty reports whether r holds no record.
func (r Records) Empty() bool {
	return len(r.Spans) == 0 && len(r.Events) == 0 && len(r.Partials) == 0
}

// Append adds o's records to r.
func (r *Records) Append(o Records) {
	r.Spans = append(r.Spans, o.Spans...)
	r.Events = append(r.Events, o.Events...)
	r.Partials = append(r.Partials, o.Partials...)
}

// Bytes estimates r's encoded size before compression: the bytes of its strings plus a fixed
// cost per record for its numbers and lengths.
func (r Records) Bytes() int {
	n := 0
	for i := range r.Spans {
		n += spanBytes(&r.Spans[i])
	}
	for i := range r.Events {
		n += eventBytes(&r.Events[i])
	}
	for i := range r.Partials {
		n += partialBytes(&r.Partials[i])
	}
	return n
}

func spanBytes(s *SpanSummary) int {
	return 64 + len(s.TraceID) + len(s.SpanID) + len(s.ParentSpanID) + len(s.SessionID) + len(s.Name) +
		len(s.StatusMessage) + len(s.Service) + len(s.GenAIKind) + len(s.Model) + len(s.ToolName) + len(s.AgentName) +
		len(s.ErrorType) + len(s.Attributes)
}

func eventBytes(e *KeyEvent) int {
	return 24 + len(e.EventID) + len(e.TraceID) + len(e.SpanID) + len(e.SessionID) + len(e.Kind) + len(e.Name) +
		len(e.Service) + len(e.Message) + len(e.Attributes)
}

func partialBytes(p *SessionPartial) int {
	n := 80 + len(p.SessionID) + len(p.BatchID) + len(p.Agent) + len(p.Service)
	for _, m := range p.Models {
		n += 1 + len(m)
	}
	for _, t := range p.TraceIDs {
		n += 1 + len(t)
	}
	return n
}

// Split cuts r into parts of at most limit each, in order: limit counts items (Items) or, with
// bytes, estimated bytes (Bytes). A record larger than limit on its own (a partial standing for
// many spans, a large summary) goes whole into a part of its own. limit <= 0 returns r alone.
func (r Records) Split(limit int, bytes bool) []Records {
	size := r.Items
	if bytes {
		size = r.Bytes
	}
	if limit <= 0 || size() <= limit {
		return []Records{r}
	}
	var out []Records
	var cur Records
	n := 0
	take := func(next int) {
		if n > 0 && n+next > limit {
			out = append(out, cur)
			cur, n = Records{}, 0
		}
		n += next
	}
	for i := range r.Spans {
		if bytes {
			take(spanBytes(&r.Spans[i]))
		} else {
			take(1)
		}
		cur.Spans = append(cur.Spans, r.Spans[i])
	}
	for i := range r.Events {
		if bytes {
			take(eventBytes(&r.Events[i]))
		} else {
			take(1)
		}
		cur.Events = append(cur.Events, r.Events[i])
	}
	for i := range r.Partials {
		p := &r.Partials[i]
		if bytes {
			take(partialBytes(p))
		} else {
			take(int(p.Spans + p.Alerts))
		}
		cur.Partials = append(cur.Partials, *p)
	}
	if n > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// BatchOf returns the id of the batch ps come from: their BatchID when they share one (several
// false; "" for none), else the SHA-256 hex of their sorted distinct batch ids, each followed by
// '\n' (several true): the same set of batches always yields the same id, whatever the order
// or repetition of ps.
func BatchOf(ps []SessionPartial) (id string, several bool) {
	batches := map[string]bool{}
	for _, p := range ps {
		batches[p.BatchID] = true
	}
	if len(batches) <= 1 {
		if len(ps) == 0 {
			return "", false
		}
		return ps[0].BatchID, false
	}
	h := sha256.New()
	for _, id := range sortedKeys(batches) {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// The records' binary form (what the warm and cold sending queues persist):
//
//	"RAR1" | zstd frame of: uvarint count, then each record's fields in declaration order
//	(span summaries, then key events, then partials), then, when every span summary's Signal
//	is known, a signals section
//
// strings are a uvarint length and the bytes; integers zigzag varints; floats the 8 bytes of
// their IEEE 754 bits, little endian; string lists a uvarint count and the strings. The signals
// section is the byte 's' then ceil(spans/8) bytes, bit i%8 of byte i/8 set when summary i's
// Signal is SignalYes; an entry without it (written before it was, or with a Signal unknown)
// decodes with every Signal SignalUnknown.

// RecordsMagic starts every encoded Records; anything else in a queue is an older entry (an
// OTLP request, queued by a build that persisted requests).
var RecordsMagic = []byte("RAR1")

// recordsMaxDecoded bounds the memory the decoder may allocate for one encoded Records (the
// size a frame header claims is allocated before decoding): 128 MiB. An entry holds the records
// of one request; the OTLP gRPC receiver takes requests of at most 4 MiB unless configured
// otherwise (configgrpc max_recv_msg_size_mib), and a request's records are at most about 3 times
// its bytes (hex ids, fixed fields per record), so this admits receivers configured up to about
// 40 MiB, while a corrupt header cannot make one entry take more than a third of the collector's
// memory budget (peak RSS 346 MB, issue 17).
const recordsMaxDecoded = 128 << 20

// recordsZstd is the records' encoder and decoder (shared, safe for concurrent use), made on
// first use; its error is any option's.
var recordsZstd = sync.OnceValues(func() (*zstdPair, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("records: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(recordsMaxDecoded))
	if err != nil {
		return nil, fmt.Errorf("records: zstd decoder: %w", err)
	}
	return &zstdPair{enc: enc, dec: dec}, nil
})

type zstdPair struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// recordsBufs holds the uncompressed encodings between MarshalRecords calls.
var recordsBufs = sync.Pool{New: func() any { return new([]byte) }}

// MarshalRecords encodes r (RecordsMagic, then the zstd-compressed fields). Its error is the zstd
// encoder's construction (never for valid options), or r's fields exceeding recordsMaxDecoded
// (what UnmarshalRecords decodes).
func MarshalRecords(r Records) ([]byte, error) {
	z, err := recordsZstd()
	if err != nil {
		return nil, err
	}
	bp := recordsBufs.Get().(*[]byte)
	b := appendRecords((*bp)[:0], &r)
	if len(b) > recordsMaxDecoded {
		// UnmarshalRecords would refuse it: a persisted queue entry that could not be read
		// back after a restart. Refused now, the request fails where its sender sees it. The
		// pooled buffer goes back as it was (the grown one is an outlier's).
		recordsBufs.Put(bp)
		return nil, fmt.Errorf("records: %d bytes of records (%d spans, %d events, %d partials) exceed the %d a queue entry may hold",
			len(b), len(r.Spans), len(r.Events), len(r.Partials), recordsMaxDecoded)
	}
	out := append(make([]byte, 0, len(b)/3+len(RecordsMagic)+32), RecordsMagic...)
	out = z.enc.EncodeAll(b, out)
	if cap(b) <= 4<<20 { // keep a request's buffer, not an outlier's
		*bp = b
		recordsBufs.Put(bp)
	}
	return out, nil
}

// appendRecords appends the uncompressed fields of r to b.
func appendRecords(b []byte, r *Records) []byte {
	b = binary.AppendUvarint(b, uint64(len(r.Spans)))
	for i := range r.Spans {
		s := &r.Spans[i]
		b = appendStrs(b, s.TraceID, s.SpanID, s.ParentSpanID, s.SessionID, s.Name)
		b = binary.AppendVarint(b, int64(s.Kind))
		b = binary.AppendVarint(b, s.Start)
		b = binary.AppendVarint(b, s.End)
		b = binary.AppendVarint(b, int64(s.StatusCode))
		b = appendStrs(b, s.StatusMessage, s.Service, s.GenAIKind, s.Model)
		b = binary.AppendVarint(b, s.InputTokens)
		b = binary.AppendVarint(b, s.OutputTokens)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.CostUSD))
		b = binary.AppendVarint(b, int64(s.Unpriced))
		b = appendStrs(b, s.ToolName, s.AgentName, s.ErrorType, s.Attributes)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for i := range r.Events {
		e := &r.Events[i]
		b = appendStrs(b, e.EventID, e.TraceID, e.SpanID, e.SessionID)
		b = binary.AppendVarint(b, e.Time)
		b = appendStrs(b, e.Kind, e.Name)
		b = binary.AppendVarint(b, int64(e.Severity))
		b = appendStrs(b, e.Service, e.Message, e.Attributes)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Partials)))
	for i := range r.Partials {
		p := &r.Partials[i]
		b = appendStrs(b, p.SessionID, p.BatchID)
		b = binary.AppendVarint(b, p.FirstSeen)
		b = binary.AppendVarint(b, p.LastSeen)
		b = appendStrs(b, p.Agent, p.Service)
		b = appendList(b, p.Models)
		b = appendList(b, p.TraceIDs)
		for _, v := range []int64{p.Spans, p.InputTokens, p.OutputTokens} {
			b = binary.AppendVarint(b, v)
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.CostUSD))
		for _, v := range []int64{p.Unpriced, p.Errors, p.Alerts, p.Ingested} {
			b = binary.AppendVarint(b, v)
		}
	}
	return appendSignals(b, r.Spans)
}

// signalsTag starts the optional signals section of the records' binary form.
const signalsTag = 's'

// appendSignals appends the signals section of spans, when every Signal is known.
func appendSignals(b []byte, spans []SpanSummary) []byte {
	if len(spans) == 0 || slices.ContainsFunc(spans, func(s SpanSummary) bool { return s.Signal == SignalUnknown }) {
		return b
	}
	b = append(b, signalsTag)
	at := len(b)
	b = append(b, make([]byte, (len(spans)+7)/8)...)
	for i := range spans {
		if spans[i].Signal == SignalYes {
			b[at+i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// IsRecords reports whether b starts with RecordsMagic.
func IsRecords(b []byte) bool {
	return len(b) >= len(RecordsMagic) && string(b[:len(RecordsMagic)]) == string(RecordsMagic)
}

// errRecords is the error of a truncated or malformed encoding.
var errRecords = errors.New("records: truncated or malformed")

// UnmarshalRecords decodes what MarshalRecords encoded. Its error names a missing header, a
// zstd frame that does not decode (or claims more than recordsMaxDecoded bytes), or fields that
// are truncated or malformed (errRecords); enc is not kept.
//
// Every string field of the result is a slice of one string, a copy of the whole decoded entry
// (one allocation, not one per field). It is safe: Go strings are immutable and that copy is
// referenced by nothing else, so no later write can change a field. Its cost is memory: one
// field kept alive keeps the whole entry (at most recordsMaxDecoded bytes; one request's records,
// a few hundred bytes a span, in practice). The writers (WarmDB.WriteRecords, the ClickHouse
// writer, the Parquet cold store) copy the values out and keep none after the write, and the
// sending queue drops the records once written; a caller that keeps a field beyond that (a
// cache, a map key) should keep strings.Clone of it.
func UnmarshalRecords(enc []byte) (Records, error) {
	var r Records
	if !IsRecords(enc) {
		return r, fmt.Errorf("records: missing %q header", RecordsMagic)
	}
	z, err := recordsZstd()
	if err != nil {
		return r, err
	}
	body, err := z.dec.DecodeAll(enc[len(RecordsMagic):], nil)
	if err != nil {
		return r, fmt.Errorf("records: %w", err)
	}
	// One string of the whole body: every string field is a slice of it (one copy, not one
	// allocation per field; the body lives as long as the records).
	d := decoder{b: body, s: string(body)}
	n := d.count()
	if n > 0 {
		r.Spans = make([]SpanSummary, n)
	}
	for i := range r.Spans {
		s := &r.Spans[i]
		d.strs(&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.SessionID, &s.Name)
		s.Kind = int32(d.varint())
		s.Start, s.End = d.varint(), d.varint()
		s.StatusCode = int32(d.varint())
		d.strs(&s.StatusMessage, &s.Service, &s.GenAIKind, &s.Model)
		s.InputTokens, s.OutputTokens = d.varint(), d.varint()
		s.CostUSD = d.float()
		s.Unpriced = int32(d.varint())
		d.strs(&s.ToolName, &s.AgentName, &s.ErrorType, &s.Attributes)
		s.Exchange, s.Edited = SummaryExchange(s.GenAIKind, s.Attributes)
	}
	if n = d.count(); n > 0 {
		r.Events = make([]KeyEvent, n)
	}
	for i := range r.Events {
		e := &r.Events[i]
		d.strs(&e.EventID, &e.TraceID, &e.SpanID, &e.SessionID)
		e.Time = d.varint()
		d.strs(&e.Kind, &e.Name)
		e.Severity = int32(d.varint())
		d.strs(&e.Service, &e.Message, &e.Attributes)
	}
	if n = d.count(); n > 0 {
		r.Partials = make([]SessionPartial, n)
	}
	for i := range r.Partials {
		p := &r.Partials[i]
		d.strs(&p.SessionID, &p.BatchID)
		p.FirstSeen, p.LastSeen = d.varint(), d.varint()
		d.strs(&p.Agent, &p.Service)
		p.Models, p.TraceIDs = d.list(), d.list()
		p.Spans, p.InputTokens, p.OutputTokens = d.varint(), d.varint(), d.varint()
		p.CostUSD = d.float()
		p.Unpriced, p.Errors, p.Alerts, p.Ingested = d.varint(), d.varint(), d.varint(), d.varint()
	}
	if d.err == nil && len(d.b) > 0 && d.b[0] == signalsTag && len(d.b) == 1+(len(r.Spans)+7)/8 {
		for i := range r.Spans {
			r.Spans[i].Signal = SignalNo
			if d.b[1+i/8]&(1<<(i%8)) != 0 {
				r.Spans[i].Signal = SignalYes
			}
		}
		d.b = nil
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errRecords
	}
	if d.err != nil {
		return Records{}, d.err
	}
	return r, nil
}

func appendStrs(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func appendList(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	return appendStrs(b, ss...)
}

// decoder reads the fields MarshalRecords wrote; the first error sticks and zeroes what follows.
// s is b as a string (b is what is left of it to read): string fields are slices of s.
type decoder struct {
	b   []byte
	s   string
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errRecords
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errRecords
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a record or list count, refusing one larger than the bytes left could hold.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errRecords
		return 0
	}
	return int(n)
}

func (d *decoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = errRecords
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) strs(ps ...*string) {
	for _, p := range ps {
		n := d.count()
		if d.err != nil {
			return
		}
		at := len(d.s) - len(d.b)
		*p = d.s[at : at+n]
		d.b = d.b[n:]
	}
}

func (d *decoder) list() []string {
	n := d.count()
	if d.err != nil {
		return nil
	}
	out := make([]string, n) // [] for none, as Partials builds them
	for i := range out {
		d.strs(&out[i])
	}
	return out
}
