//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package spanquarantineprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
	"github.com/runagain/runagain/processor/spanquarantineprocessor/internal/metadata"
)

// TestQuarantineOnChDB: with every tier on ClickHouse (config/gateway.yaml's shape, the hot tier
// written by the contrib exporter) a mixed request sent twice is accepted: its valid spans go on
// and its invalid ones are in the hot database's runagain_quarantine once each, read back
// through the extension's configuration (what `runagain quarantine --config` and the UI read).
func TestQuarantineOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	cfg := storagetest.ClickHouseTiers(srv.Endpoint)
	host, _ := storagetest.Start(t, cfg)
	sink := &consumertest.TracesSink{}
	p, err := NewFactory().CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), createDefaultConfig(), sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(ctx) }()
	for i := 0; i < 2; i++ {
		if err := p.ConsumeTraces(ctx, mixed()); err != nil {
			t.Fatalf("consume: %v, want the valid spans accepted with the hot tier on ClickHouse", err)
		}
	}
	if n := sink.SpanCount(); n != 4 {
		t.Fatalf("passed on %d spans, want the 2 valid ones of each request", n)
	}
	got, err := cfg.Quarantined(ctx, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("quarantined %+v %v, want the 2 invalid spans once each", got, err)
	}
	reasons := map[string]string{}
	for _, q := range got {
		reasons[q.Name] = q.Reason
		if q.Service != "svc" || q.OTLP == "" {
			t.Fatalf("row %+v", q)
		}
	}
	if reasons["bad-trace"] != ReasonZeroTraceID || reasons["bad-span"] != ReasonZeroSpanID {
		t.Fatalf("reasons %v", reasons)
	}
}
