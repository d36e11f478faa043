// SPDX-License-Identifier: Apache-2.0

package seal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// RedactionChangedAttribute is what agent_redaction sets on a span whose attributes it
// changed: a map from attribute key to the number of values redacted there.
const RedactionChangedAttribute = "runagain.redaction.changed"

// ResponsePrefix starts the attributes of a recorded response (fixture spans).
const ResponsePrefix = "http.response."

// SessionOf returns the session of a span (genai.SessionID with genai.DefaultSessionKeys: span
// attributes first, then the resource), else the trace id in hex (the run is its own session).
func SessionOf(span ptrace.Span, resource pcommon.Map) string {
	if id, ok := genai.SessionID(span.Attributes(), resource, genai.DefaultSessionKeys); ok {
		return id
	}
	return span.TraceID().String()
}

// Snapshot returns a copy of the attribute values of m, to be compared after redaction.
func Snapshot(m pcommon.Map) map[string]pcommon.Value {
	out := make(map[string]pcommon.Value, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		c := pcommon.NewValueEmpty()
		if v.Type() == pcommon.ValueTypeStr {
			c.SetStr(v.Str()) // pdata strings are immutable: no copy of the bytes
		} else {
			v.CopyTo(c)
		}
		out[k] = c
		return true
	})
	return out
}

func aad(span ptrace.Span, key string) []byte {
	t, s := span.TraceID(), span.SpanID()
	b := make([]byte, 0, 24+len(key))
	b = append(b, t[:]...)
	b = append(b, s[:]...)
	return append(b, key...)
}

// SealChanged seals, on span, the original of every attribute in before whose value redaction
// changed or removed, and names the session. It returns how many originals it sealed.
func SealChanged(ctx context.Context, k *Keys, span ptrace.Span, resource pcommon.Map, before map[string]pcommon.Value) (int, error) {
	attrs := span.Attributes()
	var changed []string
	for key, orig := range before {
		if strings.HasPrefix(key, AttrPrefix) {
			continue
		}
		cur, ok := attrs.Get(key)
		if ok && cur.Equal(orig) {
			continue
		}
		changed = append(changed, key)
	}
	if len(changed) == 0 {
		return 0, nil
	}
	sort.Strings(changed)
	session := SessionOf(span, resource)
	dk, err := k.DataKey(ctx, session, true)
	if err != nil {
		return 0, err
	}
	for _, key := range changed {
		orig := before[key]
		var pt []byte
		switch orig.Type() {
		case pcommon.ValueTypeStr:
			pt = append([]byte{'s'}, orig.Str()...)
		case pcommon.ValueTypeBytes:
			pt = append([]byte{'b'}, orig.Bytes().AsRaw()...)
		default: // slices and maps (header values): their JSON form
			j, err := json.Marshal(orig.AsRaw())
			if err != nil {
				return 0, err
			}
			pt = append([]byte{'j'}, j...)
		}
		sealed, err := Seal(dk, pt, aad(span, key))
		if err != nil {
			return 0, err
		}
		attrs.PutEmptyBytes(AttrPrefix + key).FromRaw(sealed)
	}
	attrs.PutStr(AttrSession, session)
	return len(changed), nil
}

// Report says what Restore did.
type Report struct {
	Restored int // attribute values put back to their originals
	// Erased lists the spans whose originals could not be opened because their session's key
	// was destroyed (runagain delete --session).
	Erased []string
	// Differs lists the spans whose recorded response redaction changed with no sealed
	// original: what replay serves there differs from what the agent saw.
	Differs []Diff
}

// Diff is one response changed by redaction without a sealed original.
type Diff struct {
	SpanID string
	Keys   []string // changed response attributes (http.response.body, http.response.header.x)
	Values int64    // values redacted in them
}

// Restore puts the sealed originals of td back in place of the redacted values (and removes the
// sealed attributes). Spans whose session key is destroyed keep their redacted values and are
// listed in Erased; spans whose response redaction changed without sealing are listed in Differs.
// only, when not nil, limits the work to the spans it accepts (fixture spans for replay).
func Restore(ctx context.Context, k *Keys, td ptrace.Traces, only func(ptrace.Span) bool) (Report, error) {
	var rep Report
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for s := 0; s < spans.Len(); s++ {
				span := spans.At(s)
				if only != nil && !only(span) {
					continue
				}
				attrs := span.Attributes()
				sv, sealed := attrs.Get(AttrSession)
				if !sealed {
					if ch, ok := attrs.Get(RedactionChangedAttribute); ok && ch.Type() == pcommon.ValueTypeMap {
						d := Diff{SpanID: span.SpanID().String()}
						ch.Map().Range(func(k string, n pcommon.Value) bool {
							if strings.HasPrefix(k, ResponsePrefix) {
								d.Keys = append(d.Keys, k)
								d.Values += n.Int()
							}
							return true
						})
						if len(d.Keys) > 0 {
							sort.Strings(d.Keys)
							rep.Differs = append(rep.Differs, d)
						}
					}
					continue
				}
				if k == nil {
					rep.Erased = append(rep.Erased, span.SpanID().String())
					continue
				}
				dk, err := k.DataKey(ctx, sv.Str(), false)
				if errors.Is(err, ErrErased) {
					rep.Erased = append(rep.Erased, span.SpanID().String())
					continue
				}
				if err != nil {
					return rep, err
				}
				type put struct {
					key string
					pt  []byte
				}
				var puts []put
				var openErr error
				attrs.Range(func(key string, v pcommon.Value) bool {
					if key == AttrSession || !strings.HasPrefix(key, AttrPrefix) || v.Type() != pcommon.ValueTypeBytes {
						return true
					}
					orig := strings.TrimPrefix(key, AttrPrefix)
					pt, err := Open(dk, v.Bytes().AsRaw(), aad(span, orig))
					if err != nil || len(pt) == 0 {
						openErr = fmt.Errorf("span %s: sealed %s does not open: %v", span.SpanID(), orig, err)
						return false
					}
					puts = append(puts, put{orig, pt})
					return true
				})
				if openErr != nil {
					return rep, openErr
				}
				for _, p := range puts {
					switch {
					case p.pt[0] == 's' && utf8.Valid(p.pt[1:]):
						attrs.PutStr(p.key, string(p.pt[1:]))
					case p.pt[0] == 'j':
						var raw any
						if err := json.Unmarshal(p.pt[1:], &raw); err != nil {
							return rep, fmt.Errorf("span %s: sealed %s: %w", span.SpanID(), p.key, err)
						}
						v := attrs.PutEmpty(p.key)
						if err := v.FromRaw(raw); err != nil {
							return rep, fmt.Errorf("span %s: sealed %s: %w", span.SpanID(), p.key, err)
						}
					default:
						attrs.PutEmptyBytes(p.key).FromRaw(p.pt[1:])
					}
					attrs.Remove(AttrPrefix + p.key)
					rep.Restored++
				}
				attrs.Remove(AttrSession)
			}
		}
	}
	return rep, nil
}
