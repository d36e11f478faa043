// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// builder appends spans to Traces, grouping them into one ResourceSpans per distinct resource
// and one ScopeSpans per distinct scope (in order of first appearance).
type builder struct {
	td     ptrace.Traces
	res    map[string]ptrace.ResourceSpans
	scopes map[[2]string]ptrace.ScopeSpans
}

func newBuilder() *builder {
	return &builder{td: ptrace.NewTraces(), res: map[string]ptrace.ResourceSpans{}, scopes: map[[2]string]ptrace.ScopeSpans{}}
}

// span returns a new span under the resource and scope described by the raw JSON values
// resAttrs (an attribute object), resSchema and scope ({"name","version","attributes",
// "dropped_attributes_count"}); any may be nil.
func (b *builder) span(resAttrs []byte, resSchema string, scope []byte) (ptrace.Span, error) {
	rk := compactKey(resAttrs) + "\x00" + resSchema
	rs, ok := b.res[rk]
	if !ok {
		rs = b.td.ResourceSpans().AppendEmpty()
		rs.SetSchemaUrl(resSchema)
		if err := putRawMap(resAttrs, rs.Resource().Attributes()); err != nil {
			return ptrace.Span{}, fmt.Errorf("resource attributes: %w", err)
		}
		b.res[rk] = rs
	}
	sk := [2]string{rk, compactKey(scope)}
	ss, ok := b.scopes[sk]
	if !ok {
		ss = rs.ScopeSpans().AppendEmpty()
		if err := fillScope(scope, ss.Scope()); err != nil {
			return ptrace.Span{}, fmt.Errorf("scope: %w", err)
		}
		b.scopes[sk] = ss
	}
	return ss.Spans().AppendEmpty(), nil
}

func compactKey(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, t) != nil {
		return string(t)
	}
	return buf.String()
}

// fillScope reads {"name","version","attributes","dropped_attributes_count"|"droppedAttributesCount"}.
func fillScope(raw []byte, sc pcommon.InstrumentationScope) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	_, m, err := objectAt(t, 0, "scope")
	if err != nil {
		return err
	}
	if s, ok, err := str(t, m["name"], "name"); err != nil {
		return err
	} else if ok {
		sc.SetName(s)
	}
	if s, ok, err := str(t, m["version"], "version"); err != nil {
		return err
	} else if ok {
		sc.SetVersion(s)
	}
	if err := putRawMap(m["attributes"].raw, sc.Attributes()); err != nil {
		return fmt.Errorf("attributes: %w", err)
	}
	for _, k := range []string{"dropped_attributes_count", "droppedAttributesCount"} {
		if n, ok, _ := number(t, m[k], k); ok {
			if v, err := n.Int64(); err == nil && v >= 0 {
				sc.SetDroppedAttributesCount(uint32(v))
			}
		}
	}
	return nil
}

// putIfAbsent stores raw (typed, see putRaw) under key unless key exists or raw is null.
func putIfAbsent(m pcommon.Map, key string, raw []byte) error {
	if _, ok := m.Get(key); ok || len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	v := pcommon.NewValueEmpty()
	if err := putRaw(raw, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	v.MoveTo(m.PutEmpty(key))
	return nil
}

// putStrIfAbsent stores s under key unless key exists.
func putStrIfAbsent(m pcommon.Map, key, s string) {
	if _, ok := m.Get(key); !ok {
		m.PutStr(key, s)
	}
}
