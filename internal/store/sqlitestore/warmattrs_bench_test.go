// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"os"
	"testing"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// warmAttrsRows are the summaries BenchmarkWarmAttrs encodes: those of
// $RUNAGAIN_WARM_ATTRS_DB (a warm.db, e.g. one make bench kept) when set, else generated runs.
func warmAttrsRows(b *testing.B) []store.SpanSummary {
	if path := os.Getenv("RUNAGAIN_WARM_ATTRS_DB"); path != "" {
		w, err := OpenWarm(path, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		rows, err := w.db.Query(`SELECT trace_id, span_id, parent_span_id, session_id, name, kind, start_time_unix_nano,
		  end_time_unix_nano, status_code, status_message, service_name, genai_kind, model, input_tokens, output_tokens,
		  cost_usd, unpriced, tool_name, agent_name, error_type, attributes FROM span_summaries LIMIT 20000`)
		if err != nil {
			b.Fatal(err)
		}
		out, err := store.ScanSpanSummaries(rows, decodeAttrs)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	var runs []storetest.Run
	for i := 0; i < 200; i++ {
		runs = append(runs, storetest.Run{Seed: string(rune('a'+i%26)) + string(rune('a'+i/26)), Session: "conv-0123456789abcdef",
			Service: "svc", Agent: "support-agent", Model: "gpt-4.1", Start: int64(i) * 1e12, LLMCalls: 4, ToolFail: i%5 == 0})
	}
	out, _ := store.Summarize(storetest.Traces(runs...), nil, nil)
	return out
}

// BenchmarkWarmAttrs encodes (and decodes) the attributes column of summaries in the compact
// form and, in the same run, as one zstd frame per row (the package's plain codec, version 3):
// stored bytes per row and time per row.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench WarmAttrs -benchmem
func BenchmarkWarmAttrs(b *testing.B) {
	rows := warmAttrsRows(b)
	json := 0
	for i := range rows {
		json += len(rows[i].Attributes)
	}
	report := func(b *testing.B, stored int) {
		b.ReportMetric(float64(stored)/float64(len(rows)), "B/row")
		b.ReportMetric(float64(json)/float64(len(rows)), "json-B/row")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	}
	b.Run("compact", func(b *testing.B) {
		var buf []byte
		stored := 0
		for it := 0; it < b.N; it++ {
			stored = 0
			for i := range rows {
				var v any
				v, buf = encodeAttrs(buf, &rows[i])
				switch t := v.(type) {
				case []byte:
					stored += len(t)
				case string:
					stored += len(t)
				}
			}
		}
		report(b, stored)
	})
	b.Run("zstd", func(b *testing.B) {
		enc, _ := plainCodec()
		var buf []byte
		stored := 0
		for it := 0; it < b.N; it++ {
			stored = 0
			for i := range rows {
				buf = enc.EncodeAll([]byte(rows[i].Attributes), buf[:0])
				stored += len(buf)
			}
		}
		report(b, stored)
	})
	b.Run("compact-decode", func(b *testing.B) {
		enc := make([][]byte, len(rows))
		for i := range rows {
			if v, _ := encodeAttrs(nil, &rows[i]); v != nil {
				if t, ok := v.([]byte); ok {
					enc[i] = t
				} else {
					enc[i] = []byte(v.(string))
				}
			}
		}
		for it := 0; it < b.N; it++ {
			for i := range rows {
				if _, err := decodeAttrs(&rows[i], enc[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, 0)
	})
}
