// SPDX-License-Identifier: Apache-2.0

// Package importer turns agent-run files written by other tools into OTLP traces (pdata
// ptrace.Traces) so that `runagain import` can send them to a collector.
//
// Formats are detected by content, never by file name. Each format implements Format and is
// listed in a Registry; the default registry (Default) holds, in detection order:
//
//   - "otlp-json": the OTLP/JSON encoding written by the collector's file exporter: one
//     ExportTraceServiceRequest document per line, or one whole (possibly pretty-printed)
//     document. Decoded with pdata's ptrace.JSONUnmarshaler.
//   - "langfuse": a Langfuse trace export, {"trace":{...},"observations":[...]}. Spans are rebuilt
//     from the observations; the original OTel span attributes, resource attributes and scope
//     are read back from each observation's metadata (see langfuse.go for the field mapping).
//   - "any-agent": mozilla-ai any-agent AgentTrace JSON, {"spans":[...],"final_output":...},
//     with decimal trace and span ids (see anyagent.go).
//
// Later formats (VCR.py YAML cassettes, go-vcr, nock JSON, HAR) are added by implementing Format
// and calling Default.Register (or listing them in a custom Registry).
//
// Values keep their JSON types: strings are stored exactly as decoded (no re-encoding), integers
// (JSON numbers without '.', 'e' or 'E' that fit in int64) become Int, other numbers Double,
// booleans Bool, arrays Slice, objects Map and null an empty value. Nothing is truncated.
//
// Errors: a file that cannot be parsed yields a *ParseError naming the file and the 1-based
// line:column of the problem; a file no format recognises yields an error wrapping
// ErrUnknownFormat. Parsing is all-or-nothing: on error no traces are returned.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ErrUnknownFormat is wrapped by the error returned when no registered format recognises a file.
var ErrUnknownFormat = errors.New("unknown import format")

// Format is one importable file format.
type Format interface {
	// Name is a short stable identifier ("otlp-json", "langfuse", ...), printed in summaries.
	Name() string
	// Detect reports whether the content looks like this format. It must be cheap and must not
	// fail: s carries the raw bytes and, for JSON input, the first top-level value's object keys.
	Detect(s *Sniff) bool
	// Parse converts the whole content into traces. Positioned problems are returned as
	// *ParseError (File may be left empty; the caller fills it in).
	Parse(data []byte) (ptrace.Traces, error)
}

// Sniff is what detectors look at: the raw bytes plus, when the content starts with a JSON
// object, its top-level keys (from the first JSON value only, so one line of a JSON-lines file).
type Sniff struct {
	Data []byte
	// Keys holds the raw JSON of each top-level member of the first JSON value, nil when the
	// content does not start with a JSON object.
	Keys map[string]json.RawMessage
	// JSONErr is the syntax error met while reading the first JSON value, if the content starts
	// like JSON ('{' or '[') but is malformed.
	JSONErr error
}

// Has reports whether the first JSON object has all the given top-level keys.
func (s *Sniff) Has(keys ...string) bool {
	if s.Keys == nil {
		return false
	}
	for _, k := range keys {
		if _, ok := s.Keys[k]; !ok {
			return false
		}
	}
	return true
}

func newSniff(data []byte) *Sniff {
	s := &Sniff{Data: data}
	trim := bytes.TrimLeft(data, " \t\r\n")
	if len(trim) == 0 || (trim[0] != '{' && trim[0] != '[') {
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys map[string]json.RawMessage
	if err := dec.Decode(&keys); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) { // valid JSON, but not an object (e.g. an array)
			return s
		}
		s.JSONErr = jsonError(data, 0, err)
		return s
	}
	s.Keys = keys
	return s
}

// Registry is an ordered list of formats; the first whose Detect returns true parses the file.
type Registry struct {
	mu      sync.RWMutex
	formats []Format
}

// Default is the registry used by ParseFile and ParseBytes.
var Default = NewRegistry(OTLPJSON{}, Langfuse{}, AnyAgent{})

// NewRegistry returns a registry holding formats in detection order.
func NewRegistry(formats ...Format) *Registry {
	return &Registry{formats: append([]Format(nil), formats...)}
}

// Register appends f to the detection order. It panics if a format with the same name exists.
func (r *Registry) Register(f Format) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.formats {
		if g.Name() == f.Name() {
			panic("importer: format registered twice: " + f.Name())
		}
	}
	r.formats = append(r.formats, f)
}

// Formats returns the registered formats in detection order.
func (r *Registry) Formats() []Format {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Format(nil), r.formats...)
}

// Detect returns the format of data. name is used in errors only. When no format matches it
// returns the JSON syntax error (as *ParseError) if the content is malformed JSON, else an error
// wrapping ErrUnknownFormat that lists the known formats.
func (r *Registry) Detect(name string, data []byte) (Format, error) {
	s := newSniff(data)
	formats := r.Formats()
	for _, f := range formats {
		if f.Detect(s) {
			return f, nil
		}
	}
	if s.JSONErr != nil {
		return nil, withFile(name, s.JSONErr)
	}
	names := make([]string, 0, len(formats))
	for _, f := range formats {
		names = append(names, f.Name())
	}
	what := describeUnknown(data, s)
	return nil, fmt.Errorf("%s: %w (%s); known formats: %s", name, ErrUnknownFormat, what, strings.Join(names, ", "))
}

// ErrNoSpans is wrapped by the error of a file in a known format that holds no span (an OTLP
// export of `{"resourceSpans":[]}`, a trace export with no observation).
var ErrNoSpans = errors.New("no span")

// Result is one parsed file.
type Result struct {
	File   string
	Format string
	Traces ptrace.Traces
}

// SpanCount is the number of spans in the result.
func (r Result) SpanCount() int { return r.Traces.SpanCount() }

// TraceCount is the number of distinct trace ids in the result.
func (r Result) TraceCount() int { return TraceCount(r.Traces) }

// ParseBytes detects the format of data and parses it completely. name is the file name used
// in errors.
//
// A leading UTF-8 byte order mark is skipped (positions on line 1 then count from after it).
func (r *Registry) ParseBytes(name string, data []byte) (Result, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if len(bytes.TrimSpace(data)) == 0 {
		return Result{}, fmt.Errorf("%s: empty file: %w", name, ErrUnknownFormat)
	}
	f, err := r.Detect(name, data)
	if err != nil {
		return Result{}, err
	}
	td, err := f.Parse(data)
	if err != nil {
		return Result{}, withFile(name, err)
	}
	if td.SpanCount() == 0 {
		// a file that parses to nothing is an export that went wrong, not a run to import
		return Result{}, fmt.Errorf("%s: %s file with %w, nothing to import", name, f.Name(), ErrNoSpans)
	}
	return Result{File: name, Format: f.Name(), Traces: td}, nil
}

// ParseFile reads and parses the file at path.
func (r *Registry) ParseFile(path string) (Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Result{}, err // *fs.PathError names the file
	}
	return r.ParseBytes(path, data)
}

// ParseFile parses path with the Default registry.
func ParseFile(path string) (Result, error) { return Default.ParseFile(path) }

// ParseBytes parses data with the Default registry; name is used in errors.
func ParseBytes(name string, data []byte) (Result, error) { return Default.ParseBytes(name, data) }

// TraceCount returns the number of distinct trace ids in td.
func TraceCount(td ptrace.Traces) int {
	seen := map[[16]byte]struct{}{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				seen[spans.At(k).TraceID()] = struct{}{}
			}
		}
	}
	return len(seen)
}
