// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// BenchmarkTierWrites writes the same batch (20 runs, 147 spans with payloads) to each embedded
// backend and reports the warm and cold write cost as ratios to the hot write, measured in the
// same run: warm/hot and cold/hot (lower is cheaper than the hot tier).
func BenchmarkTierWrites(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	var runs []storetest.Run
	for i := 0; i < 20; i++ {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("bench-%d", i), Session: fmt.Sprintf("conv-%d", i%5), Service: "svc",
			Agent: "a", Model: "gpt-4.1", Start: time.Now().UnixNano(), LLMCalls: 6, ToolFail: i%3 == 0})
	}
	td := storetest.Traces(runs...)
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer hot.Close()
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close()
	cold, err := coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cold.Close()
	writes := []func() error{
		func() error { _, err := hot.WriteTraces(ctx, td); return err },
		func() error { return warm.WriteTraces(ctx, td) },
		func() error {
			_, err := cold.Write(ctx, store.Partials(td, plog.Logs{}, nil, 0, nil))
			return err
		},
	}
	var spent [3]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, w := range writes {
			start := time.Now()
			if err := w(); err != nil {
				b.Fatal(err)
			}
			spent[k] += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "warm/hot")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "cold/hot")
	b.ReportMetric(float64(td.SpanCount()), "spans/batch")
}
