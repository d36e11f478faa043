// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Langfuse is Langfuse's trace export, {"trace":{...},"observations":[...]} (as returned by
// its public API and written by its framework-trace fixtures).
//
// Each observation becomes one span:
//
//	trace id     observation.traceId (else trace.id): 32 hex digits or a UUID; any other string
//	             is hashed (SHA-256, first 16 bytes) and kept in langfuse.trace.id
//	span id      observation.id: 16 hex digits; else hashed (first 8 bytes), kept in langfuse.observation.id
//	parent       parentObservationId, mapped the same way
//	name         name
//	start, end   startTime, endTime (RFC 3339; a null endTime leaves the end unset)
//	status       level ERROR -> Error with statusMessage as message; otherwise Unset
//	attributes   metadata.attributes: the original OTel span attributes, typed (see putRaw)
//	resource     metadata.resourceAttributes
//	scope        metadata.scope {name, version, attributes}
//
// metadata is a JSON string holding an object (older exports) or the object itself; a string
// that is not a JSON object is kept whole in langfuse.observation.metadata. Other members of
// metadata (Langfuse SDK metadata such as langgraph_node) become langfuse.observation.metadata.<key>.
//
// Langfuse's own fields are added with Langfuse's OTel attribute names, never overwriting an
// attribute of the same name: always langfuse.observation.type; langfuse.observation.level
// when not DEFAULT; langfuse.observation.status_message when the level is not ERROR. For
// observations that carry no OTel attributes (created by a Langfuse SDK rather than ingested
// over OTel, so their data lives only in Langfuse fields) also langfuse.observation.input and
// .output (a JSON string stays the string, other JSON is kept as compact JSON text),
// .model.name, .model.parameters, .usage_details, .cost_details, .completion_start_time,
// .prompt.name, .prompt.version and langfuse.version. For observations ingested over OTel, an
// input or output in the GenAI conventions' message form (role and parts) is the
// gen_ai.input.messages / gen_ai.output.messages Langfuse moved out of the attributes, and becomes
// that attribute again when the span lacks it; any other input or output is kept in
// langfuse.observation.input / .output when the attributes hold that side in no form genai
// reads (lfMessages).
//
// Trace-level fields go on the root spans (no parentObservationId): session.id (sessionId),
// user.id (userId), langfuse.trace.name, langfuse.trace.tags (a Slice), langfuse.release,
// langfuse.version, langfuse.environment (when not "default"), and
// langfuse.trace.metadata.<key> for trace metadata members other than attributes,
// resourceAttributes and scope (which duplicate the root observation's). Each score becomes a
// span event "langfuse.score" on its observation's span (or the root spans) with its members as
// langfuse.score.<member>.
//
// A trace without observations becomes one span built from the trace itself.
type Langfuse struct{}

// Name implements Format.
func (Langfuse) Name() string { return "langfuse" }

// Detect implements Format.
func (Langfuse) Detect(s *Sniff) bool { return s.Has("trace", "observations") }

// Parse implements Format.
func (Langfuse) Parse(data []byte) (ptrace.Traces, error) {
	p := &lfParser{data: data, b: newBuilder(), spans: map[string]ptrace.Span{}}
	if err := p.parse(); err != nil {
		return ptrace.Traces{}, err
	}
	return p.b.td, nil
}

type lfParser struct {
	data  []byte
	b     *builder
	spans map[string]ptrace.Span // by observation id
	roots []ptrace.Span
}

func (p *lfParser) parse() error {
	_, top, err := objectAt(p.data, skipSep(p.data, 0), "Langfuse export")
	if err != nil {
		return err
	}
	trF := top["trace"]
	_, tr, err := objectAt(p.data, trF.off, "trace")
	if err != nil {
		return err
	}
	traceID, ok, err := str(p.data, tr["id"], "trace.id")
	if err != nil {
		return err
	}
	if !ok || traceID == "" {
		return errorAt(p.data, trF.off, nil, "trace.id is missing")
	}
	obs, err := arrayAt(p.data, top["observations"].off, "observations")
	if err != nil {
		return err
	}
	for i, o := range obs {
		if err := p.observation(i, o, traceID); err != nil {
			return err
		}
	}
	if len(obs) == 0 {
		if err := p.traceOnly(tr, traceID); err != nil {
			return err
		}
	}
	return p.traceFields(tr)
}

// lfMeta is an observation's (or the trace's) metadata split into its parts.
type lfMeta struct {
	attrs, resource, scope []byte
	hasAttrs               bool
	extraKeys              []string
	extra                  map[string]field
	whole                  string // metadata string that is not a JSON object
	hasWhole               bool
}

func (p *lfParser) meta(f field, what string) (lfMeta, error) {
	var m lfMeta
	if f.isNull() {
		return m, nil
	}
	obj := bytes.TrimSpace(f.raw)
	if obj[0] == '"' {
		var s string
		if err := json.Unmarshal(obj, &s); err != nil {
			return m, errorAt(p.data, f.off, err, "%s: %v", what, err)
		}
		t := strings.TrimSpace(s)
		if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
			m.whole, m.hasWhole = s, true
			return m, nil
		}
		obj = []byte(t)
	}
	keys, mem, err := objectAt(obj, 0, what)
	if err != nil {
		return m, p.inner(f, what, err)
	}
	for _, k := range keys {
		switch k {
		case "attributes":
			m.attrs, m.hasAttrs = mem[k].raw, true
		case "resourceAttributes":
			m.resource = mem[k].raw
		case "scope":
			m.scope = mem[k].raw
		default:
			m.extraKeys = append(m.extraKeys, k)
		}
	}
	m.extra = mem
	return m, nil
}

// inner positions an error found inside an embedded JSON document at the field holding it.
func (p *lfParser) inner(f field, what string, err error) error {
	msg := err.Error()
	var pe *ParseError
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("at %d:%d inside the embedded JSON: %s", pe.Line, pe.Column, pe.Msg)
	}
	return errorAt(p.data, f.off, err, "%s: %s", what, msg)
}

func (p *lfParser) observation(i int, o field, traceID string) error {
	what := fmt.Sprintf("observations[%d]", i)
	_, m, err := objectAt(p.data, o.off, what)
	if err != nil {
		return err
	}
	id, ok, err := str(p.data, m["id"], what+".id")
	if err != nil {
		return err
	}
	if !ok || id == "" {
		return errorAt(p.data, o.off, nil, "%s: id is missing", what)
	}
	what = fmt.Sprintf("observations[%d] (id %s)", i, id)
	if _, dup := p.spans[id]; dup {
		return errorAt(p.data, o.off, nil, "%s: duplicate observation id", what)
	}
	md, err := p.meta(m["metadata"], what+".metadata")
	if err != nil {
		return err
	}
	span, err := p.b.span(md.resource, "", md.scope)
	if err != nil {
		return p.inner(m["metadata"], what+".metadata", err)
	}
	p.spans[id] = span
	attrs := span.Attributes()
	if err := putRawMap(md.attrs, attrs); err != nil {
		return p.inner(m["metadata"], what+".metadata.attributes", err)
	}
	for _, k := range md.extraKeys {
		if err := putIfAbsent(attrs, "langfuse.observation.metadata."+k, md.extra[k].raw); err != nil {
			return p.inner(m["metadata"], what+".metadata", err)
		}
	}
	if md.hasWhole {
		putStrIfAbsent(attrs, "langfuse.observation.metadata", md.whole)
	}

	tid := traceID
	if s, ok, err := str(p.data, m["traceId"], what+".traceId"); err != nil {
		return err
	} else if ok && s != "" {
		tid = s
	}
	tID, exact := traceIDFromString(tid)
	span.SetTraceID(tID)
	if !exact {
		putStrIfAbsent(attrs, "langfuse.trace.id", tid)
	}
	sID, exact := spanIDFromString(id)
	span.SetSpanID(sID)
	if !exact {
		putStrIfAbsent(attrs, "langfuse.observation.id", id)
	}
	if parent, ok, err := str(p.data, m["parentObservationId"], what+".parentObservationId"); err != nil {
		return err
	} else if ok && parent != "" {
		pID, _ := spanIDFromString(parent)
		span.SetParentSpanID(pID)
	} else {
		p.roots = append(p.roots, span)
	}
	if name, _, err := str(p.data, m["name"], what+".name"); err != nil {
		return err
	} else {
		span.SetName(name)
	}
	if err := p.setTime(m["startTime"], what+".startTime", true, span.SetStartTimestamp); err != nil {
		return err
	}
	if err := p.setTime(m["endTime"], what+".endTime", false, span.SetEndTimestamp); err != nil {
		return err
	}

	if typ, ok, err := str(p.data, m["type"], what+".type"); err != nil {
		return err
	} else if ok && typ != "" {
		putStrIfAbsent(attrs, "langfuse.observation.type", typ)
	}
	level, _, err := str(p.data, m["level"], what+".level")
	if err != nil {
		return err
	}
	msg, hasMsg, err := str(p.data, m["statusMessage"], what+".statusMessage")
	if err != nil {
		return err
	}
	if strings.EqualFold(level, "ERROR") {
		span.Status().SetCode(ptrace.StatusCodeError)
		span.Status().SetMessage(msg)
	} else if hasMsg && msg != "" {
		putStrIfAbsent(attrs, "langfuse.observation.status_message", msg)
	}
	if level != "" && !strings.EqualFold(level, "DEFAULT") {
		putStrIfAbsent(attrs, "langfuse.observation.level", level)
	}

	if !md.hasAttrs { // data recorded by a Langfuse SDK lives only in Langfuse's fields
		for _, f := range []struct{ src, key string }{
			{"input", "langfuse.observation.input"},
			{"output", "langfuse.observation.output"},
			{"model", "langfuse.observation.model.name"},
			{"modelParameters", "langfuse.observation.model.parameters"},
			{"usageDetails", "langfuse.observation.usage_details"},
			{"costDetails", "langfuse.observation.cost_details"},
			{"completionStartTime", "langfuse.observation.completion_start_time"},
			{"promptName", "langfuse.observation.prompt.name"},
			{"promptVersion", "langfuse.observation.prompt.version"},
			{"version", "langfuse.version"},
		} {
			v := m[f.src]
			if isEmptyJSON(v.raw) {
				continue
			}
			putStrIfAbsent(attrs, f.key, compactJSON(v.raw))
		}
	} else {
		lfMessages(m, span)
	}
	lfGenAI(m, attrs)
	return nil
}

func (p *lfParser) setTime(f field, what string, required bool, set func(pcommon.Timestamp)) error {
	s, ok, err := str(p.data, f, what)
	if err != nil {
		return err
	}
	if !ok || s == "" {
		if required {
			return errorAt(p.data, f.off, nil, "%s is missing", what)
		}
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errorAt(p.data, f.off, err, "%s: %q is not an RFC 3339 time", what, s)
	}
	set(pcommon.NewTimestampFromTime(t))
	return nil
}

// traceOnly builds the single span of a trace exported without observations.
func (p *lfParser) traceOnly(tr map[string]field, traceID string) error {
	md, err := p.meta(tr["metadata"], "trace.metadata")
	if err != nil {
		return err
	}
	span, err := p.b.span(md.resource, "", md.scope)
	if err != nil {
		return p.inner(tr["metadata"], "trace.metadata", err)
	}
	if err := putRawMap(md.attrs, span.Attributes()); err != nil {
		return p.inner(tr["metadata"], "trace.metadata.attributes", err)
	}
	tID, exact := traceIDFromString(traceID)
	span.SetTraceID(tID)
	sID, _ := spanIDFromString("trace:" + traceID)
	span.SetSpanID(sID)
	if !exact {
		putStrIfAbsent(span.Attributes(), "langfuse.trace.id", traceID)
	}
	name, _, err := str(p.data, tr["name"], "trace.name")
	if err != nil {
		return err
	}
	span.SetName(name)
	if err := p.setTime(tr["timestamp"], "trace.timestamp", false, func(ts pcommon.Timestamp) {
		span.SetStartTimestamp(ts)
		span.SetEndTimestamp(ts)
	}); err != nil {
		return err
	}
	for _, f := range []struct{ src, key string }{
		{"input", "langfuse.trace.input"},
		{"output", "langfuse.trace.output"},
	} {
		if v := tr[f.src]; !isEmptyJSON(v.raw) {
			putStrIfAbsent(span.Attributes(), f.key, compactJSON(v.raw))
		}
	}
	p.roots = append(p.roots, span)
	return nil
}

// traceFields puts trace-level fields on the root spans and attaches scores as events.
func (p *lfParser) traceFields(tr map[string]field) error {
	md, err := p.meta(tr["metadata"], "trace.metadata")
	if err != nil {
		return err
	}
	strs := []struct{ src, key string }{
		{"sessionId", "session.id"},
		{"userId", "user.id"},
		{"name", "langfuse.trace.name"},
		{"release", "langfuse.release"},
		{"version", "langfuse.version"},
		{"environment", "langfuse.environment"},
	}
	for _, root := range p.roots {
		attrs := root.Attributes()
		for _, f := range strs {
			s, ok, err := str(p.data, tr[f.src], "trace."+f.src)
			if err != nil {
				return err
			}
			if !ok || s == "" || (f.src == "environment" && s == "default") {
				continue
			}
			putStrIfAbsent(attrs, f.key, s)
		}
		if tags := tr["tags"]; !isEmptyJSON(tags.raw) {
			if err := putIfAbsent(attrs, "langfuse.trace.tags", tags.raw); err != nil {
				return errorAt(p.data, tags.off, err, "trace.tags: %v", err)
			}
		}
		for _, k := range md.extraKeys {
			if err := putIfAbsent(attrs, "langfuse.trace.metadata."+k, md.extra[k].raw); err != nil {
				return p.inner(tr["metadata"], "trace.metadata", err)
			}
		}
		if md.hasWhole {
			putStrIfAbsent(attrs, "langfuse.trace.metadata", md.whole)
		}
	}
	var scores []field
	if !tr["scores"].isNull() {
		if scores, err = arrayAt(p.data, tr["scores"].off, "trace.scores"); err != nil {
			return err
		}
	}
	for i, sc := range scores {
		if err := p.score(i, sc); err != nil {
			return err
		}
	}
	return nil
}

func (p *lfParser) score(i int, sc field) error {
	what := fmt.Sprintf("trace.scores[%d]", i)
	keys, m, err := objectAt(p.data, sc.off, what)
	if err != nil {
		return err
	}
	targets := p.roots
	if oid, ok, err := str(p.data, m["observationId"], what+".observationId"); err != nil {
		return err
	} else if ok && oid != "" {
		if s, found := p.spans[oid]; found {
			targets = []ptrace.Span{s}
		}
	}
	for _, span := range targets {
		ev := span.Events().AppendEmpty()
		ev.SetName("langfuse.score")
		if err := p.setTime(m["timestamp"], what+".timestamp", false, ev.SetTimestamp); err != nil {
			return err
		}
		for _, k := range keys {
			switch k {
			case "projectId", "traceId", "timestamp", "createdAt", "updatedAt":
				continue
			}
			v := m[k]
			if isEmptyJSON(v.raw) {
				continue
			}
			if err := putIfAbsent(ev.Attributes(), "langfuse.score."+k, v.raw); err != nil {
				return errorAt(p.data, v.off, err, "%s.%s: %v", what, k, err)
			}
		}
	}
	return nil
}
