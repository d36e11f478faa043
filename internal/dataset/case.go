// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

type fixtureSide struct{ key, name string }

// fixtureSides are the body attributes of a fixture span moved to files under bodies/: an HTTP
// exchange's bodies (<span id>.request.json, .response.txt, ...) and an MCP stdio exchange's
// JSON-RPC messages (<span id>.mcp-request.json, .mcp-response.json); nil for other spans.
func fixtureSides(sp ptrace.Span) []fixtureSide {
	switch {
	case fixture.IsFixture(sp):
		return []fixtureSide{{fixture.AttrRequestBody, "request"}, {fixture.AttrResponseBody, "response"}}
	case mcp.IsExchange(sp):
		return []fixtureSide{{mcp.AttrRequest, "mcp-request"}, {mcp.AttrResponse, "mcp-response"}}
	}
	return nil
}

// Files of a case (paths relative to the case directory).
const (
	FileRun    = "run.json"
	FileLogs   = "logs.json"
	FileExpect = "expect.yaml"
	DirBodies  = "bodies"
	// BodyFileSuffix marks the span attribute that names a fixture body's file in run.json:
	// http.request.body is moved to bodies/<span id>.request.<ext> and the span keeps
	// http.request.body_file = "bodies/<span id>.request.<ext>".
	BodyFileSuffix = "_file"
)

// Case is one frozen run: Files are its bytes as stored and exported; Traces (fixture bodies put
// back), Logs and Expect are parsed from them.
type Case struct {
	ID      string
	TraceID string
	Files   map[string][]byte

	Traces ptrace.Traces
	Logs   plog.Logs
	Expect *CaseExpect
}

// CaseExpect is the content of expect.yaml.
type CaseExpect struct {
	// Input is the case's input, given to the command under test (RUNAGAIN_CASE_INPUT); default:
	// the last user message of the run's first LLM call.
	Input string `yaml:"input,omitempty" json:"input,omitempty"`
	// Expect are checked in order; the first that fails is the case's failure.
	Expect []Expectation `yaml:"expect" json:"expect"`
}

func (c *Case) paths() []string {
	ps := make([]string, 0, len(c.Files))
	for p := range c.Files {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Freeze builds a case from a run whose payloads are rehydrated: run.json (every span, fixture
// bodies moved to files under bodies/), logs.json when the run has log records, and expect.yaml.
// A payload still offloaded (a *_ref attribute whose object could not be read) is an error naming
// the span and attribute: the case would miss it.
func Freeze(id string, traceID string, td ptrace.Traces, ld plog.Logs, ex *CaseExpect) (*Case, error) {
	if id == "" {
		id = traceID
	}
	c := &Case{ID: id, TraceID: traceID, Files: map[string][]byte{}}
	td2 := ptrace.NewTraces()
	td.CopyTo(td2)
	var ferr error
	eachSpan(td2, func(sp ptrace.Span) bool {
		a := sp.Attributes()
		a.Range(func(k string, v pcommon.Value) bool {
			if ref.IsRefKey(k) {
				ferr = fmt.Errorf("case %s: span %s: %s is still offloaded (%s): its payload could not be read, so the run cannot be frozen", id, sp.SpanID(), strings.TrimSuffix(k, "_ref"), v.AsString())
				return false
			}
			return true
		})
		sides := fixtureSides(sp)
		if ferr != nil || sides == nil {
			return ferr == nil
		}
		for _, side := range sides {
			v, ok := a.Get(side.key)
			if !ok {
				continue
			}
			var b []byte
			ext := ".bin"
			if v.Type() == pcommon.ValueTypeBytes {
				b = bytes.Clone(v.Bytes().AsRaw())
			} else {
				b = []byte(v.AsString())
				ext = ".txt"
				if json.Valid(b) {
					ext = ".json"
				}
			}
			p := path.Join(DirBodies, sp.SpanID().String()+"."+side.name+ext)
			c.Files[p] = b
			a.Remove(side.key)
			a.PutStr(side.key+BodyFileSuffix, p)
		}
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td2)
	if err != nil {
		return nil, err
	}
	if c.Files[FileRun], err = indentJSON(raw); err != nil {
		return nil, err
	}
	if ld.LogRecordCount() > 0 {
		raw, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		if err != nil {
			return nil, err
		}
		if c.Files[FileLogs], err = indentJSON(raw); err != nil {
			return nil, err
		}
	}
	if ex == nil {
		ex = &CaseExpect{}
	}
	if c.Files[FileExpect], err = marshalExpect(id, ex); err != nil {
		return nil, err
	}
	return c, c.parse()
}

const expectHeader = `# Expectations of case %s: what a new run of the agent must meet (runagain test).
# Edit freely; ` + "`runagain dataset import`" + ` of the edited directory adds a new version.
# Kinds (one per item): output: {equals|contains|regex: TEXT} or {json_path: PATH, value: JSON};
# tools: {names: [..], arguments: [..]}; max_cost_usd, max_tokens, max_steps, max_duration;
# no_alert: KIND (or "any"); replay: strict | {diverge_after: N}.
`

func marshalExpect(id string, ex *CaseExpect) ([]byte, error) {
	if ex.Expect == nil {
		ex.Expect = []Expectation{}
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, expectHeader, id)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(ex); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// parse fills Traces, Logs and Expect from Files; errors name the case and file.
func (c *Case) parse() error {
	where := func(f string) string { return "cases/" + c.ID + "/" + f }
	raw, ok := c.Files[FileRun]
	if !ok {
		return fmt.Errorf("case %s: %s is missing", c.ID, where(FileRun))
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		return fmt.Errorf("case %s: %s: not OTLP JSON traces: %w", c.ID, where(FileRun), err)
	}
	if td.SpanCount() == 0 {
		return fmt.Errorf("case %s: %s holds no span", c.ID, where(FileRun))
	}
	var perr error
	eachSpan(td, func(sp ptrace.Span) bool {
		a := sp.Attributes()
		for _, key := range []string{fixture.AttrRequestBody, fixture.AttrResponseBody, mcp.AttrRequest, mcp.AttrResponse} {
			v, ok := a.Get(key + BodyFileSuffix)
			if !ok {
				continue
			}
			p := v.AsString()
			b, ok := c.Files[p]
			if !ok {
				perr = fmt.Errorf("case %s: span %s: fixture body %s is missing (named by %s in %s)", c.ID, sp.SpanID(), where(p), key+BodyFileSuffix, where(FileRun))
				return false
			}
			a.Remove(key + BodyFileSuffix)
			if strings.HasSuffix(p, ".bin") || !utf8.Valid(b) {
				a.PutEmptyBytes(key).FromRaw(bytes.Clone(b))
			} else {
				a.PutStr(key, string(b))
			}
		}
		return true
	})
	if perr != nil {
		return perr
	}
	c.Traces = td
	c.Logs = plog.NewLogs()
	if raw, ok := c.Files[FileLogs]; ok {
		if c.Logs, err = (&plog.JSONUnmarshaler{}).UnmarshalLogs(raw); err != nil {
			return fmt.Errorf("case %s: %s: not OTLP JSON logs: %w", c.ID, where(FileLogs), err)
		}
	}
	c.Expect = &CaseExpect{}
	if raw, ok := c.Files[FileExpect]; ok {
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(c.Expect); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("case %s: %s: %w", c.ID, where(FileExpect), err)
		}
		for i, e := range c.Expect.Expect {
			if err := e.Validate(); err != nil {
				return fmt.Errorf("case %s: %s: expectation %d: %w", c.ID, where(FileExpect), i+1, err)
			}
		}
	}
	return nil
}

func eachSpan(td ptrace.Traces, f func(ptrace.Span) bool) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if !f(spans.At(k)) {
					return
				}
			}
		}
	}
}
