// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// OTLPJSON is the OTLP/JSON trace format written by the collector's file exporter: one
// ExportTraceServiceRequest JSON document per line (JSON lines), or one whole document that may
// span many lines. Documents are decoded with pdata's ptrace.JSONUnmarshaler (which also
// migrates deprecated fields) and concatenated in file order.
//
// A document holding logs, metrics or profiles instead of traces is an error (nothing in the
// file is imported), so data is never dropped silently.
type OTLPJSON struct{}

// Name implements Format.
func (OTLPJSON) Name() string { return "otlp-json" }

// Detect implements Format: the first JSON object has a top-level resourceSpans (or another
// OTLP signal's resource list, which Parse then rejects with a clear error).
func (OTLPJSON) Detect(s *Sniff) bool {
	for _, k := range []string{"resourceSpans", "resourceLogs", "resourceMetrics", "resourceProfiles"} {
		if s.Has(k) {
			return true
		}
	}
	return false
}

// Parse implements Format.
func (OTLPJSON) Parse(data []byte) (ptrace.Traces, error) {
	all := ptrace.NewTraces()
	dec := json.NewDecoder(bytes.NewReader(data))
	var u ptrace.JSONUnmarshaler
	docs := 0
	for {
		start := skipSep(data, dec.InputOffset())
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ptrace.Traces{}, jsonError(data, 0, err)
		}
		docs++
		if len(raw) == 0 || raw[0] != '{' {
			return ptrace.Traces{}, errorAt(data, start, nil, "OTLP/JSON: expected a JSON object (an ExportTraceServiceRequest), got %s", snippet(raw))
		}
		td, err := u.UnmarshalTraces(raw)
		if err != nil {
			at := start
			if rel, ok := iterErrorOffset(raw, err.Error()); ok {
				at = start + rel
			}
			return ptrace.Traces{}, errorAt(data, at, err, "OTLP/JSON document %d: %v", docs, err)
		}
		if td.ResourceSpans().Len() == 0 {
			var keys map[string]json.RawMessage
			_ = json.Unmarshal(raw, &keys)
			for _, k := range []string{"resourceLogs", "resourceMetrics", "resourceProfiles"} {
				if _, ok := keys[k]; ok {
					return ptrace.Traces{}, errorAt(data, start, nil, "OTLP/JSON document %d holds %s, not traces (resourceSpans); runagain import reads traces only", docs, k)
				}
			}
		}
		// A span with an all-zero trace or span id is sent as recorded: the collector keeps its
		// valid neighbours and the span itself in its dead-letter table (span_quarantine), and
		// says so through OTLP partial success, as for an SDK's request (README Guarantees).
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	if docs == 0 {
		return ptrace.Traces{}, errorAt(data, 0, nil, "OTLP/JSON: no document in file")
	}
	return all, nil
}

// iterErrRE matches pdata's JSON iterator error suffix: "error found in #N byte of ...|WINDOW|...".
var iterErrRE = regexp.MustCompile(`error found in #(\d+) byte of \.\.\.\|(.*?)\|\.\.\.`)

// iterErrorOffset locates a pdata JSON iterator error inside raw: the window quoted in the
// message is searched for in raw; when it occurs exactly once the error is N bytes into it.
func iterErrorOffset(raw []byte, msg string) (int64, bool) {
	m := iterErrRE.FindStringSubmatch(msg)
	if m == nil || m[2] == "" {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	w := []byte(m[2])
	i := bytes.Index(raw, w)
	if i < 0 || bytes.Contains(raw[i+1:], w) {
		return 0, false
	}
	if n > len(w) {
		n = len(w)
	}
	return int64(i + n), true
}
