// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
)

// spanRow is one span of a WriteTraces call on its way to its row.
type spanRow struct {
	f                     SpanFacts
	span                  ptrace.Span // for its payload references
	name, genaiKind       string
	kind, status          int64
	unpriced              int64
	group, off, n         int   // its frame group and its protobuf's place in the group's bytes
	codec, dict           int64 // its otlp column's codec and dictionary (or frame) id
	storedFrom, storedEnd int   // its otlp column in traceWrite.stored (a row of its own)
}

// frameGroup is the spans of one trace in a WriteTraces call that are compressed together.
type frameGroup struct {
	raw   []byte // the spans' protobuf, concatenated
	spans []int  // indexes into traceWrite.spans
	// the stored frame (when spans > 1)
	codec, dict int64
	frame       []byte
}

// traceWrite is the state of one WriteTraces call, reused across calls (traceWrites).
type traceWrite struct {
	now    int64
	spans  []spanRow
	groups []frameGroup
	open   map[pcommon.TraceID]int // the group a trace's next span joins
	stored []byte                  // the otlp columns of rows encoded alone, back to back
	args   []any
	ref    []byte
	wire   []wireSpan    // the request's spans (spanRequests)
	one    []byte        // one span's request
	td     ptrace.Traces // the request, for signing its failing runs without reading them back (batchRuns)
}

var traceWrites = sync.Pool{New: func() any { return &traceWrite{open: map[pcommon.TraceID]int{}} }}

func getTraceWrite() *traceWrite { return traceWrites.Get().(*traceWrite) }

func putTraceWrite(w *traceWrite) {
	if cap(w.stored) > 4<<20 { // keep the pool's memory bounded after an outsized request
		return
	}
	for i := range w.spans {
		w.spans[i] = spanRow{}
	}
	for i := range w.groups {
		w.groups[i].raw, w.groups[i].spans, w.groups[i].frame = w.groups[i].raw[:0], w.groups[i].spans[:0], w.groups[i].frame[:0]
	}
	clear(w.wire)
	w.td = ptrace.Traces{}
	w.spans, w.groups, w.stored, w.wire = w.spans[:0], w.groups[:0], w.stored[:0], w.wire[:0]
	clear(w.open)
	clear(w.args)
	traceWrites.Put(w)
}

// collectSpans reads the spans of td into w (facts, protobuf grouped by trace) and returns the
// spans it refuses; an error is a span that does not encode.
func (d *DB) collectSpans(w *traceWrite, td ptrace.Traces) (rejected []error, err error) {
	w.now = d.now().UnixNano()
	var m ptrace.ProtoMarshaler
	// Each span's request is cut from the whole request's bytes (spanwire.go); a request whose
	// bytes do not split into its spans (never expected) marshals each span alone.
	w.wire = w.wire[:0]
	if req, err := m.MarshalTraces(td); err == nil {
		if err := spanRequests(req, func(s wireSpan) { w.wire = append(w.wire, s) }); err != nil || len(w.wire) != td.SpanCount() {
			w.wire = w.wire[:0]
		}
	}
	next := 0 // the span's index in w.wire
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := stringAttr(rs.Resource().Attributes(), genai.AttrServiceName)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				span := ss.Spans().At(k)
				next++
				if span.TraceID().IsEmpty() || span.SpanID().IsEmpty() {
					rejected = append(rejected, fmt.Errorf("%w %q: empty trace_id or span_id (OTLP requires non-zero ids)", ErrInvalidSpan, span.Name()))
					continue
				}
				var buf []byte
				if len(w.wire) > 0 {
					w.one = appendRequest(w.one[:0], w.wire[next-1])
					buf = w.one
				} else if buf, err = m.MarshalTraces(store.SpanTraces(rs, ss, span)); err != nil {
					return rejected, fmt.Errorf("encode span %s: %w", span.SpanID(), err)
				}
				attrs := span.Attributes()
				session, _ := genai.SessionID(attrs, rs.Resource().Attributes(), d.sessionKeys)
				genaiKind := genai.Classify(attrs)
				usage := genai.RunUsage(genaiKind, attrs)
				cost := d.prices.UsageCost(usage, attrs, span.StartTimestamp())
				parent := ""
				if !span.ParentSpanID().IsEmpty() {
					parent = span.ParentSpanID().String()
				}
				r := spanRow{span: span, name: span.Name(), kind: int64(span.Kind()), status: int64(span.Status().Code()),
					genaiKind: string(genaiKind),
					f: SpanFacts{TraceID: span.TraceID().String(), SpanID: span.SpanID().String(), ParentSpanID: parent,
						SessionID: session, Service: service, Model: genai.Model(attrs), Start: int64(span.StartTimestamp()),
						End: int64(span.EndTimestamp()), InputTokens: usage.Input, OutputTokens: usage.Output,
						Error: span.Status().Code() == ptrace.StatusCodeError, CostUSD: cost.USD, Unpriced: cost.Unpriced,
						Exchange: store.DerivedExchange(span, genaiKind), Edited: store.EditedExchange(span, genaiKind)}}
				r.f.LLM = genaiKind == genai.KindLLM && !r.f.Exchange
				r.f.Signal = r.f.Error || !d.noPatterns && patterns.SpanSignal(attrs) // read: nothing is marked
				if cost.Unpriced {
					r.unpriced = 1
				}
				g, ok := w.open[span.TraceID()]
				if !ok || d.rowFrames || len(w.groups[g].raw)+len(buf) > frameMaxRaw && len(w.groups[g].spans) > 0 {
					g = len(w.groups)
					if g < cap(w.groups) {
						w.groups = w.groups[:g+1]
					} else {
						w.groups = append(w.groups, frameGroup{})
					}
					w.open[span.TraceID()] = g
				}
				grp := &w.groups[g]
				r.group, r.off, r.n = g, len(grp.raw), len(buf)
				grp.raw = append(grp.raw, buf...)
				grp.spans = append(grp.spans, len(w.spans))
				w.spans = append(w.spans, r)
			}
		}
	}
	return rejected, nil
}

// encodeFrames compresses each group: a group of one span is its row's own frame, a larger
// group one span frame. Before the file has a dictionary every span is a training sample.
func (d *DB) encodeFrames(w *traceWrite) {
	for g := range w.groups {
		grp := &w.groups[g]
		if !d.codec.hasDict() {
			for _, i := range grp.spans {
				r := &w.spans[i]
				d.codec.sampleRaw(grp.raw[r.off : r.off+r.n])
			}
		}
		if len(grp.spans) == 1 {
			r := &w.spans[grp.spans[0]]
			r.storedFrom = len(w.stored)
			w.stored, r.codec, r.dict = d.codec.encode(w.stored, grp.raw, false)
			r.storedEnd = len(w.stored)
			continue
		}
		grp.frame, grp.codec, grp.dict = d.codec.encode(grp.frame[:0], grp.raw, false)
	}
}

// insertSpans writes w's frames and span rows in tx, records them in batch and their payload
// references in refs. The rows go in with multi-row INSERTs (chunkRows); a row whose span is
// stored already (an at-least-once retry, or the same span twice in the transaction) is
// replaced (retriedSpans).
func (d *DB) insertSpans(ctx context.Context, tx *sql.Tx, w *traceWrite, batch *RunBatch, refs *refBatch) error {
	for g := range w.groups {
		grp := &w.groups[g]
		if len(grp.spans) < 2 {
			continue
		}
		frames, err := d.stmts.stmt(ctx, tx, stmtFrame)
		if err != nil {
			return err
		}
		res, err := frames.ExecContext(ctx, grp.codec, grp.dict, len(grp.spans), grp.frame)
		if err != nil {
			return fmt.Errorf("insert span frame: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for _, i := range grp.spans {
			w.spans[i].codec, w.spans[i].dict = CodecFrame, id
		}
	}
	for from := 0; from < len(w.spans); {
		n := chunkRows(len(w.spans) - from)
		st, err := d.spansStmt(ctx, tx, n)
		if err != nil {
			return err
		}
		w.args, w.ref = w.args[:0], w.ref[:0]
		for i := from; i < from+n; i++ {
			w.args = w.appendSpanArgs(w.args, i)
		}
		res, err := st.ExecContext(ctx, w.args...)
		if err != nil {
			return fmt.Errorf("insert spans: %w", err)
		}
		inserted, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if int(inserted) == n {
			for i := from; i < from+n; i++ {
				r := &w.spans[i]
				batch.Inserted(r.f)
				for _, uri := range store.SpanPayloadRefs(r.span) {
					refs.add(r.f.TraceID, r.f.SpanID, uri)
				}
			}
		} else if err := d.retriedSpans(ctx, tx, w, from, n, res, inserted, batch, refs); err != nil {
			return err
		}
		from += n
	}
	return nil
}

// spansStmt is the INSERT of n span rows that leaves a span already stored as it is (writerSQL).
func (d *DB) spansStmt(ctx context.Context, tx *sql.Tx, n int) (*sql.Stmt, error) {
	return d.stmts.stmt(ctx, tx, stmtSpans(n))
}

// appendSpanArgs appends the column values of w.spans[i] (spanColumns) to args.
func (w *traceWrite) appendSpanArgs(args []any, i int) []any {
	r := &w.spans[i]
	var otlp []byte
	if r.codec == CodecFrame {
		from := len(w.ref)
		w.ref = frameRef(w.ref, r.off, r.n)
		otlp = w.ref[from:len(w.ref):len(w.ref)] // an earlier row's bytes stay where they are if w.ref grows
	} else {
		otlp = w.stored[r.storedFrom:r.storedEnd]
	}
	f := &r.f
	return append(args, f.TraceID, f.SpanID, f.ParentSpanID, f.SessionID, r.name, r.kind, f.Start, f.End,
		r.status, f.Service, r.genaiKind, f.Model, f.InputTokens, f.OutputTokens, otlp, w.now, f.CostUSD, r.unpriced,
		r.codec, r.dict)
}

// retriedSpans finishes the chunk of n rows from w.spans[from] whose INSERT (res) stored only
// inserted of them: the rest were stored already. SQLite gives each new row the largest rowid
// plus one (https://www.sqlite.org/autoinc.html), so the statement's rows are the rowids up to
// its last insert; a span not among them is replaced: its stored row is deleted (its triggers
// drop its payload references and release its frame), the row inserted again, and its run
// recomputed (RunBatch.Replaced). The references collected so far go in first: the row's DELETE
// removes its own. When the rows read back by rowid are not the statement's (rowids not
// consecutive: the table's largest rowid is the largest integer, and SQLite picks new ones at
// random) every span of the chunk is replaced so: exact, at the cost of recomputing its runs.
func (d *DB) retriedSpans(ctx context.Context, tx *sql.Tx, w *traceWrite, from, n int, res sql.Result, inserted int64, batch *RunBatch, refs *refBatch) (err error) {
	fresh, err := insertedRows(ctx, tx, "spans", res, inserted)
	if err != nil {
		return err
	}
	if int64(len(fresh)) == inserted && inserted > 0 {
		in := make(map[[2]string]bool, n)
		for i := from; i < from+n; i++ {
			in[[2]string{w.spans[i].f.TraceID, w.spans[i].f.SpanID}] = true
		}
		for k := range fresh {
			if !in[k] {
				clear(fresh) // a row of another statement: rowids not consecutive
				break
			}
		}
	} else {
		clear(fresh)
	}
	if len(fresh) == 0 && inserted > 0 {
		// Every row is replaced, the statement's own too: the frames they point into are kept
		// from their DELETE triggers (holdFrames) until their counts are set right after (recountFrames).
		defer func() {
			if err == nil {
				err = d.recountFrames(ctx, tx, w, from, n)
			}
		}()
		if err := d.holdFrames(ctx, tx, w, from, n); err != nil {
			return err
		}
	}
	for i := from; i < from+n; i++ {
		r := &w.spans[i]
		f := &r.f
		if k := [2]string{f.TraceID, f.SpanID}; fresh[k] {
			delete(fresh, k) // a second row of the same span in the chunk is a retry
			batch.Inserted(*f)
		} else {
			if err := d.flushRefs(ctx, tx, refs); err != nil {
				return fmt.Errorf("insert payload references: %w", err)
			}
			remove, err := d.stmts.stmt(ctx, tx, stmtRemove)
			if err != nil {
				return err
			}
			if _, err := remove.ExecContext(ctx, f.TraceID, f.SpanID); err != nil {
				return fmt.Errorf("replace span %s: %w", f.SpanID, err)
			}
			again, err := d.spansStmt(ctx, tx, 1)
			if err != nil {
				return err
			}
			w.ref = w.ref[:0]
			res, err := again.ExecContext(ctx, w.appendSpanArgs(w.args[:0], i)...)
			if err != nil {
				return fmt.Errorf("replace span %s: %w", f.SpanID, err)
			}
			if k, err := res.RowsAffected(); err != nil || k != 1 {
				return fmt.Errorf("replace span %s: %d rows inserted (%v)", f.SpanID, k, err)
			}
			batch.Replaced(f.TraceID)
			batch.Exchange(*f)
		}
		for _, uri := range store.SpanPayloadRefs(r.span) {
			refs.add(f.TraceID, f.SpanID, uri)
		}
	}
	return nil
}

// holdFrames adds to the count of each span frame the rows w.spans[from:from+n] point into the
// number of those rows, so that replacing rows the chunk's own INSERT stored (their DELETE
// decrements the frame) never deletes a frame rows still point into.
func (d *DB) holdFrames(ctx context.Context, tx *sql.Tx, w *traceWrite, from, n int) error {
	held := map[int64]int{}
	for i := from; i < from+n; i++ {
		if r := &w.spans[i]; r.codec == CodecFrame {
			held[r.dict]++
		}
	}
	for id, k := range held {
		if _, err := tx.ExecContext(ctx, `UPDATE span_frames SET spans = spans + ? WHERE id = ?`, k, id); err != nil {
			return fmt.Errorf("replace spans: %w", err)
		}
	}
	return nil
}

// recountFrames sets the count of each span frame the rows w.spans[from:from+n] point into
// (after holdFrames and their replacement): the rows of its trace pointing into it, plus the
// rows of w after the chunk that will (a frame is never shared by two traces).
func (d *DB) recountFrames(ctx context.Context, tx *sql.Tx, w *traceWrite, from, n int) error {
	done := map[int64]bool{}
	for i := from; i < from+n; i++ {
		r := &w.spans[i]
		if r.codec != CodecFrame || done[r.dict] {
			continue
		}
		done[r.dict] = true
		pending := 0
		for j := from + n; j < len(w.spans); j++ {
			if w.spans[j].codec == CodecFrame && w.spans[j].dict == r.dict {
				pending++
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE span_frames SET spans = ?3 +
		  (SELECT COUNT(*) FROM spans WHERE trace_id = ?1 AND otlp_codec = 3 AND otlp_dict = ?2) WHERE id = ?2`,
			r.f.TraceID, r.dict, pending); err != nil {
			return fmt.Errorf("replace spans: %w", err)
		}
	}
	return nil
}

// insertedRows returns the (trace_id, span_id) of the rows the INSERT into table whose result is
// res added, inserted of them, as a set: both tables keep (trace_id, span_id) UNIQUE, so a key
// is on one row at most and the set's size is the number of rows found. SQLite gives each new row of a rowid table the largest rowid plus one
// (https://www.sqlite.org/autoinc.html), so one statement's new rows are the inserted rowids up
// to its last insert (res.LastInsertId); the callers check the rows found are the statement's.
func insertedRows(ctx context.Context, tx *sql.Tx, table string, res sql.Result, inserted int64) (map[[2]string]bool, error) {
	out := map[[2]string]bool{}
	if inserted <= 0 {
		return out, nil
	}
	last, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT trace_id, span_id FROM `+table+` WHERE rowid > ? AND rowid <= ?`, last-inserted, last)
	if err != nil {
		return nil, fmt.Errorf("read back the rows inserted into %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}
