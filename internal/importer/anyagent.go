// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// AnyAgent is mozilla-ai any-agent's AgentTrace JSON: {"spans":[AgentSpan...],"final_output":...}.
// An AgentSpan is the OTel Python SDK ReadableSpan as a dict:
//
//	name, kind ("internal"|"server"|"client"|"producer"|"consumer"),
//	context/parent {trace_id, span_id (decimal integers, 128/64 bit), is_remote,
//	                trace_flags {value}, trace_state {entries {k: v}}}  (parent may be null or hold null ids),
//	start_time, end_time (Unix nanoseconds), status {status_code ("unset"|"ok"|"error"), description},
//	attributes {k: v}, events [{name, timestamp, attributes}], links [{context, attributes}],
//	resource {attributes, schema_url}
//
// Ids may also be hex strings. Span flags carry trace_flags.value plus the OTLP "has is_remote"
// bit and the parent's is_remote. any-agent records no instrumentation scope, so the scope is
// empty. final_output (the agent's answer) is kept on the root spans (no parent) as the
// attribute any_agent.final_output: a JSON string stays that string, other JSON is compact JSON text.
type AnyAgent struct{}

// Name implements Format.
func (AnyAgent) Name() string { return "any-agent" }

// Detect implements Format: a top-level "spans" array whose first element has "context" (or an
// empty array).
func (AnyAgent) Detect(s *Sniff) bool {
	raw, ok := s.Keys["spans"]
	if !ok {
		return false
	}
	elems, err := arrayAt(raw, 0, "spans")
	if err != nil {
		return false
	}
	if len(elems) == 0 {
		return true
	}
	_, m, err := objectAt(elems[0].raw, 0, "span")
	if err != nil {
		return false
	}
	_, hasCtx := m["context"]
	return hasCtx
}

// Parse implements Format.
func (AnyAgent) Parse(data []byte) (ptrace.Traces, error) {
	_, top, err := objectAt(data, skipSep(data, 0), "any-agent trace")
	if err != nil {
		return ptrace.Traces{}, err
	}
	spans, err := arrayAt(data, top["spans"].off, "spans")
	if err != nil {
		return ptrace.Traces{}, err
	}
	b := newBuilder()
	var roots []ptrace.Span
	for i, sf := range spans {
		span, root, err := aaSpan(data, b, i, sf)
		if err != nil {
			return ptrace.Traces{}, err
		}
		if root {
			roots = append(roots, span)
		}
	}
	if fo := top["final_output"]; !fo.isNull() {
		for _, r := range roots {
			putStrIfAbsent(r.Attributes(), "any_agent.final_output", compactJSON(fo.raw))
		}
	}
	return b.td, nil
}

func aaSpan(data []byte, b *builder, i int, sf field) (ptrace.Span, bool, error) {
	what := fmt.Sprintf("spans[%d]", i)
	_, m, err := objectAt(data, sf.off, what)
	if err != nil {
		return ptrace.Span{}, false, err
	}
	var resAttrs []byte
	schema := ""
	if rf := m["resource"]; !rf.isNull() {
		_, rm, err := objectAt(data, rf.off, what+".resource")
		if err != nil {
			return ptrace.Span{}, false, err
		}
		resAttrs = rm["attributes"].raw
		if s, _, err := str(data, rm["schema_url"], what+".resource.schema_url"); err != nil {
			return ptrace.Span{}, false, err
		} else {
			schema = s
		}
	}
	span, err := b.span(resAttrs, schema, nil)
	if err != nil {
		return ptrace.Span{}, false, errorAt(data, m["resource"].off, err, "%s.resource: %v", what, err)
	}
	name, _, err := str(data, m["name"], what+".name")
	if err != nil {
		return span, false, err
	}
	span.SetName(name)
	what = fmt.Sprintf("spans[%d] (%s)", i, name)

	ctx, err := aaContext(data, m["context"], what+".context")
	if err != nil {
		return span, false, err
	}
	if !ctx.hasIDs {
		return span, false, errorAt(data, sf.off, nil, "%s: context.trace_id/span_id missing", what)
	}
	span.SetTraceID(ctx.traceID)
	span.SetSpanID(ctx.spanID)
	span.TraceState().FromRaw(ctx.traceState)
	flags := ctx.flags | 0x100 // OTLP SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	root := true
	if pf := m["parent"]; !pf.isNull() {
		parent, err := aaContext(data, pf, what+".parent")
		if err != nil {
			return span, false, err
		}
		if parent.hasIDs {
			span.SetParentSpanID(parent.spanID)
			root = false
			if parent.remote {
				flags |= 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
			}
		}
	}
	span.SetFlags(flags)

	if k, ok, err := str(data, m["kind"], what+".kind"); err != nil {
		return span, false, err
	} else if ok {
		kind, known := spanKind(k)
		if !known {
			return span, false, errorAt(data, m["kind"].off, nil, "%s.kind: unknown span kind %q", what, k)
		}
		span.SetKind(kind)
	}
	for _, t := range []struct {
		key string
		set func(pcommon.Timestamp)
	}{{"start_time", span.SetStartTimestamp}, {"end_time", span.SetEndTimestamp}} {
		if err := aaTime(data, m[t.key], what+"."+t.key, t.set); err != nil {
			return span, false, err
		}
	}
	if sf := m["status"]; !sf.isNull() {
		_, sm, err := objectAt(data, sf.off, what+".status")
		if err != nil {
			return span, false, err
		}
		code, _, err := str(data, sm["status_code"], what+".status.status_code")
		if err != nil {
			return span, false, err
		}
		switch strings.ToLower(strings.TrimPrefix(code, "StatusCode.")) {
		case "", "unset":
		case "ok":
			span.Status().SetCode(ptrace.StatusCodeOk)
		case "error":
			span.Status().SetCode(ptrace.StatusCodeError)
		default:
			return span, false, errorAt(data, sm["status_code"].off, nil, "%s.status.status_code: unknown %q", what, code)
		}
		desc, _, err := str(data, sm["description"], what+".status.description")
		if err != nil {
			return span, false, err
		}
		span.Status().SetMessage(desc)
	}
	if err := putRawMap(m["attributes"].raw, span.Attributes()); err != nil {
		return span, false, errorAt(data, m["attributes"].off, err, "%s.attributes: %v", what, err)
	}
	events, err := arrayAt(data, m["events"].off, what+".events")
	if m["events"].isNull() {
		events, err = nil, nil
	}
	if err != nil {
		return span, false, err
	}
	for j, ef := range events {
		ew := fmt.Sprintf("%s.events[%d]", what, j)
		_, em, err := objectAt(data, ef.off, ew)
		if err != nil {
			return span, false, err
		}
		ev := span.Events().AppendEmpty()
		n, _, err := str(data, em["name"], ew+".name")
		if err != nil {
			return span, false, err
		}
		ev.SetName(n)
		if err := aaTime(data, em["timestamp"], ew+".timestamp", ev.SetTimestamp); err != nil {
			return span, false, err
		}
		if err := putRawMap(em["attributes"].raw, ev.Attributes()); err != nil {
			return span, false, errorAt(data, em["attributes"].off, err, "%s.attributes: %v", ew, err)
		}
	}
	links, err := arrayAt(data, m["links"].off, what+".links")
	if m["links"].isNull() {
		links, err = nil, nil
	}
	if err != nil {
		return span, false, err
	}
	for j, lf := range links {
		lw := fmt.Sprintf("%s.links[%d]", what, j)
		_, lm, err := objectAt(data, lf.off, lw)
		if err != nil {
			return span, false, err
		}
		lc, err := aaContext(data, lm["context"], lw+".context")
		if err != nil {
			return span, false, err
		}
		l := span.Links().AppendEmpty()
		l.SetTraceID(lc.traceID)
		l.SetSpanID(lc.spanID)
		l.TraceState().FromRaw(lc.traceState)
		lflags := lc.flags | 0x100
		if lc.remote {
			lflags |= 0x200
		}
		l.SetFlags(lflags)
		if err := putRawMap(lm["attributes"].raw, l.Attributes()); err != nil {
			return span, false, errorAt(data, lm["attributes"].off, err, "%s.attributes: %v", lw, err)
		}
	}
	return span, root, nil
}

type aaCtx struct {
	traceID    pcommon.TraceID
	spanID     pcommon.SpanID
	hasIDs     bool
	remote     bool
	flags      uint32
	traceState string
}

func aaContext(data []byte, f field, what string) (aaCtx, error) {
	var c aaCtx
	if f.isNull() {
		return c, nil
	}
	_, m, err := objectAt(data, f.off, what)
	if err != nil {
		return c, err
	}
	tOK, sOK := !m["trace_id"].isNull(), !m["span_id"].isNull()
	if tOK != sOK {
		return c, errorAt(data, f.off, nil, "%s: trace_id and span_id must both be set or both be null", what)
	}
	if tOK {
		if err := aaID(data, m["trace_id"], what+".trace_id", c.traceID[:]); err != nil {
			return c, err
		}
		if err := aaID(data, m["span_id"], what+".span_id", c.spanID[:]); err != nil {
			return c, err
		}
		c.hasIDs = true
	}
	if rf := m["is_remote"]; !rf.isNull() {
		c.remote = strings.TrimSpace(string(rf.raw)) == "true"
	}
	if ff := m["trace_flags"]; !ff.isNull() {
		var n = field{raw: ff.raw, off: ff.off}
		if len(ff.raw) > 0 && ff.raw[0] == '{' {
			_, fm, err := objectAt(data, ff.off, what+".trace_flags")
			if err != nil {
				return c, err
			}
			n = fm["value"]
		}
		if v, ok, err := number(data, n, what+".trace_flags.value"); err != nil {
			return c, err
		} else if ok {
			i, err := v.Int64()
			if err != nil || i < 0 || i > 0xff {
				return c, errorAt(data, n.off, err, "%s.trace_flags.value: %s is not a byte", what, v)
			}
			c.flags = uint32(i)
		}
	}
	if tf := m["trace_state"]; !tf.isNull() {
		_, tm, err := objectAt(data, tf.off, what+".trace_state")
		if err != nil {
			return c, err
		}
		if ef := tm["entries"]; !ef.isNull() {
			keys, em, err := objectAt(data, ef.off, what+".trace_state.entries")
			if err != nil {
				return c, err
			}
			parts := make([]string, 0, len(keys))
			for _, k := range keys {
				v, _, err := str(data, em[k], what+".trace_state.entries."+k)
				if err != nil {
					return c, err
				}
				parts = append(parts, k+"="+v)
			}
			c.traceState = strings.Join(parts, ",")
		}
	}
	return c, nil
}

// aaID decodes a decimal integer (or a hex string) id into dst, big-endian.
func aaID(data []byte, f field, what string, dst []byte) error {
	n, _, err := number(data, f, what)
	if err != nil {
		return err
	}
	s := n.String()
	if f.raw[0] == '"' { // hex string form
		h := strings.TrimPrefix(strings.ToLower(s), "0x")
		if len(h) == 2*len(dst) {
			if b, err := hex.DecodeString(h); err == nil {
				copy(dst, b)
				return nil
			}
		}
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 8*len(dst) {
		return errorAt(data, f.off, nil, "%s: %s is not a %d-bit unsigned integer", what, snippet(f.raw), 8*len(dst))
	}
	v.FillBytes(dst)
	return nil
}

func aaTime(data []byte, f field, what string, set func(pcommon.Timestamp)) error {
	n, ok, err := number(data, f, what)
	if err != nil || !ok {
		return err
	}
	v, ok := new(big.Int).SetString(n.String(), 10)
	if !ok || v.Sign() < 0 || !v.IsUint64() {
		return errorAt(data, f.off, nil, "%s: %s is not Unix nanoseconds", what, n)
	}
	set(pcommon.Timestamp(v.Uint64()))
	return nil
}

func spanKind(s string) (ptrace.SpanKind, bool) {
	switch strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "SpanKind."), "SPAN_KIND_")) {
	case "", "unspecified":
		return ptrace.SpanKindUnspecified, true
	case "internal":
		return ptrace.SpanKindInternal, true
	case "server":
		return ptrace.SpanKindServer, true
	case "client":
		return ptrace.SpanKindClient, true
	case "producer":
		return ptrace.SpanKindProducer, true
	case "consumer":
		return ptrace.SpanKindConsumer, true
	}
	return ptrace.SpanKindUnspecified, false
}
