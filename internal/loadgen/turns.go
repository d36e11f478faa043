// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"iter"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
)

// Turns yields the spans of every turn of sessions sessions of cfg (indexes 0 to sessions-1,
// cfg.Sessions set to sessions), round-robin over the sessions, turn by turn, so that a
// conversation's later calls come after its earlier ones, each trace ending at now: make bench's
// traffic generated offline, for benchmarks.
func Turns(cfg Config, sessions int, now time.Time) iter.Seq[[]SpanSpec] {
	return func(yield func([]SpanSpec) bool) {
		cfg.Sessions = int64(sessions)
		ss := make([]*Session, sessions)
		for i := range ss {
			ss[i] = NewSession(&cfg, int64(i))
		}
		for done := false; !done; {
			done = true
			for _, s := range ss {
				specs := s.NextTurn(now)
				if specs == nil {
					continue
				}
				done = false
				if !yield(specs) {
					return
				}
			}
		}
	}
}

// PutAttrs puts the OTel API attributes kvs into m (string, int64, float64, bool and string
// slice values as such; any other type as its String form).
func PutAttrs(m pcommon.Map, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		k := string(kv.Key)
		switch kv.Value.Type() {
		case attribute.STRING:
			m.PutStr(k, kv.Value.AsString())
		case attribute.INT64:
			m.PutInt(k, kv.Value.AsInt64())
		case attribute.FLOAT64:
			m.PutDouble(k, kv.Value.AsFloat64())
		case attribute.BOOL:
			m.PutBool(k, kv.Value.AsBool())
		case attribute.STRINGSLICE:
			s := m.PutEmptySlice(k)
			for _, v := range kv.Value.AsStringSlice() {
				s.AppendEmpty().SetStr(v)
			}
		default:
			m.PutStr(k, kv.Value.String())
		}
	}
}
