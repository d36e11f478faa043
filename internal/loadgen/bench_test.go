// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Benchmarks of the generator, in the standard `go test -bench` format so that benchstat can
// compare two runs:
//
//	go test -run '^$' -bench . -count 6 ./internal/loadgen > new.txt && benchstat old.txt new.txt
//
// Each reports spans/op and uses SetBytes with the string attribute bytes generated, so
// B/s is the payload generation rate.

func benchTurns(b *testing.B, cfg Config) {
	b.ReportAllocs()
	now := time.Unix(1_800_000_000, 0)
	var spans, bytes int64
	var s *Session
	idx := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s == nil || s.Done() {
			if s != nil {
				bytes += s.Stats().AttrBytes
			}
			s = NewSession(&cfg, idx)
			idx++
		}
		spans += int64(len(s.NextTurn(now)))
	}
	b.StopTimer()
	bytes += s.Stats().AttrBytes
	b.ReportMetric(float64(spans)/float64(b.N), "spans/op")
	b.SetBytes(bytes / int64(b.N))
}

// BenchmarkGenerateTurn: one turn (one trace) of the default traffic.
func BenchmarkGenerateTurn(b *testing.B) { benchTurns(b, DefaultConfig()) }

// BenchmarkGenerateTurnNoHistory: the same without resending the conversation.
func BenchmarkGenerateTurnNoHistory(b *testing.B) {
	cfg := DefaultConfig()
	cfg.ResendHistory = false
	benchTurns(b, cfg)
}

// BenchmarkGenerateTurnLargeMessages: 8 KiB messages, 10 turns (long conversations).
func BenchmarkGenerateTurnLargeMessages(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MessageBytes, cfg.Turns = 8192, 10
	benchTurns(b, cfg)
}

// BenchmarkGenerateTurnAllPII: every message holds PII and a secret.
func BenchmarkGenerateTurnAllPII(b *testing.B) {
	cfg := DefaultConfig()
	cfg.PIIRate, cfg.SecretRate = 1, 1
	benchTurns(b, cfg)
}

// BenchmarkProse: 512 bytes of message text.
func BenchmarkProse(b *testing.B) {
	cfg := DefaultConfig()
	s := NewSession(&cfg, 0)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(512)
	for i := 0; i < b.N; i++ {
		buf = s.txt.prose(buf[:0], 512)
	}
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkEmitTurn: generating a turn and creating its spans through the OTel SDK (batch
// processor, exporter discarding), i.e. the client-side cost per trace without the network.
func BenchmarkEmitTurn(b *testing.B) {
	cfg := DefaultConfig()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}, sdktrace.WithBlocking()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("bench")
	b.ReportAllocs()
	var spans int64
	var s *Session
	idx := int64(0)
	for i := 0; i < b.N; i++ {
		if s == nil || s.Done() {
			s = NewSession(&cfg, idx)
			idx++
		}
		specs := s.NextTurn(time.Now())
		emit(tr, specs)
		spans += int64(len(specs))
	}
	b.ReportMetric(float64(spans)/float64(b.N), "spans/op")
}
