// SPDX-License-Identifier: Apache-2.0

package importer

// Cassettes: recordings of HTTP exchanges written by test tools (VCR.py, go-vcr, nock, HAR).
// Each cassette becomes one fixture trace: a root span (kind INTERNAL, named
// "fixture <format>") and one CLIENT span per exchange in the shape of internal/fixture, so
// `runagain replay` serves a team's cassette suite like a run recorded by `runagain proxy`.
//
// Ids are content-derived: the trace id is the first 16 bytes of SHA-256 of the file, span ids
// hash the trace id and the exchange index, so importing the same file twice stores one run.
// Cassettes carry no timing (except go-vcr durations and HAR start times); exchanges without it
// start at the import time, one millisecond apart, in recorded order.
//
// Compressed response bodies (Content-Encoding gzip, deflate, zstd, br) are stored decoded, so
// they can be read, redacted and offloaded; the recorded headers are kept as recorded and
// runagain.fixture.decoded_content_encoding tells replay to serve the identity encoding.

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/llmhttp"
)

func init() {
	Default.Register(GoVCR{})
	Default.Register(VCRPy{})
	Default.Register(Nock{})
	Default.Register(HAR{})
}

// cassetteNow is the clock for exchanges without recorded times.
var cassetteNow = time.Now

// maxDecodedBody bounds a decompressed body (1 GiB) so a hostile cassette cannot exhaust memory.
const maxDecodedBody = 1 << 30

// ErrNoExchanges is wrapped by the error of a cassette that records no HTTP exchange (nock's
// "[]" for a test that made no request, an empty VCR.py or go-vcr interactions list, a HAR
// without entries, WireMock without mappings): importing it would store a run with nothing to
// show or replay, so it is refused and nothing is sent.
var ErrNoExchanges = errors.New("no HTTP exchange recorded")

// cassetteTraces builds the fixture trace of one cassette; a cassette without exchanges is an
// error wrapping ErrNoExchanges.
func cassetteTraces(format string, data []byte, exs []*fixture.Exchange) (ptrace.Traces, error) {
	if len(exs) == 0 {
		return ptrace.Traces{}, errorAt(data, 0, ErrNoExchanges, "%s recording: %v, nothing to import (a test that made no request)", format, ErrNoExchanges)
	}
	sum := sha256.Sum256(data)
	var tid pcommon.TraceID
	copy(tid[:], sum[:16])
	base := cassetteNow().UTC().Truncate(time.Millisecond)
	var start, end time.Time
	for i, ex := range exs {
		ex.Index = i
		if ex.Source == "" {
			ex.Source = format
		}
		if ex.Start.IsZero() {
			ex.Start = base.Add(time.Duration(i) * time.Millisecond)
		}
		if ex.End.Before(ex.Start) {
			ex.End = ex.Start
		}
		if start.IsZero() || ex.Start.Before(start) {
			start = ex.Start
		}
		if ex.End.After(end) {
			end = ex.End
		}
		decodeResponse(ex)
		if ex.Chunks == nil && fixture.IsEventStream(ex.ResponseHeader.Get("Content-Type")) {
			ex.Chunks = fixture.SplitEvents(ex.ResponseBody)
		}
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "runagain-fixture")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(fixture.ScopeName)
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(cassetteSpanID(tid, -1))
	root.SetName("fixture " + format)
	root.SetKind(ptrace.SpanKindInternal)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	root.Attributes().PutStr(fixture.AttrSource, format)
	root.Attributes().PutInt("runagain.fixture.exchanges", int64(len(exs)))
	for i, ex := range exs {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(cassetteSpanID(tid, i))
		sp.SetParentSpanID(root.SpanID())
		fixture.ToSpan(ex, sp)
		llmhttp.Derive(ex, sp.Attributes()) // the call's GenAI attributes, read from the recorded bodies
	}
	return td, nil
}

func cassetteSpanID(tid pcommon.TraceID, i int) pcommon.SpanID {
	var buf [24]byte
	copy(buf[:16], tid[:])
	binary.BigEndian.PutUint64(buf[16:], uint64(int64(i)))
	sum := sha256.Sum256(buf[:])
	var id pcommon.SpanID
	copy(id[:], sum[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

// decodeResponse decodes a compressed response body in place. A body that does not decode is
// taken as already decoded (HAR and some serializers store the decoded text next to the
// original Content-Encoding header); either way replay serves identity.
func decodeResponse(ex *fixture.Exchange) {
	enc := strings.ToLower(strings.TrimSpace(ex.ResponseHeader.Get("Content-Encoding")))
	if enc == "" || enc == "identity" || ex.DecodedEncoding != "" {
		return
	}
	ex.DecodedEncoding = enc
	if out, err := decodeBody(enc, ex.ResponseBody); err == nil {
		ex.ResponseBody = out
	}
}

// decodeBody undoes one Content-Encoding.
func decodeBody(enc string, b []byte) ([]byte, error) {
	var r io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		r = flate.NewReader(bytes.NewReader(b))
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, errUnsupportedEncoding
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecodedBody))
	if err != nil {
		return nil, err
	}
	return out, nil
}

var errUnsupportedEncoding = &ParseError{Msg: "unsupported content encoding"}

// headerAdd appends a header value keeping the recorded name's canonical form.
func headerAdd(h http.Header, name, value string) {
	k := http.CanonicalHeaderKey(name)
	h[k] = append(h[k], value)
}
