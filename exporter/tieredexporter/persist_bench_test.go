// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// countingStorage wraps the real file_storage extension and counts the bytes the sending
// queues hand it to persist (values of Set operations).
type countingStorage struct {
	storage.Extension
	bytes *atomic.Int64
}

func (c countingStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	cl, err := c.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, err
	}
	return countingClient{Client: cl, bytes: c.bytes}, nil
}

type countingClient struct {
	storage.Client
	bytes *atomic.Int64
}

func (c countingClient) Set(ctx context.Context, key string, value []byte) error {
	c.bytes.Add(int64(len(value)))
	return c.Client.Set(ctx, key, value)
}

func (c countingClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		if op.Type == storage.Set {
			c.bytes.Add(int64(len(op.Value)))
		}
	}
	return c.Client.Batch(ctx, ops...)
}

// countingBackend counts the spans a tier has written.
type countingBackend struct {
	runagainstorageextension.Backend
	spans *atomic.Int64
}

func (c countingBackend) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	if err := c.Backend.WriteTraces(ctx, td); err != nil {
		return err
	}
	c.spans.Add(int64(td.SpanCount()))
	return nil
}

func (c countingBackend) WriteLogs(ctx context.Context, ld plog.Logs) error {
	return c.Backend.WriteLogs(ctx, ld)
}

// countingRecordBackend is countingBackend for a backend that builds its records before the
// queue: it counts the spans its records stand for.
type countingRecordBackend struct {
	countingBackend
	rb runagainstorageextension.RecordBackend
}

func (c countingRecordBackend) TraceRecords(td ptrace.Traces) store.Records {
	return c.rb.TraceRecords(td)
}

func (c countingRecordBackend) LogRecords(ld plog.Logs) store.Records { return c.rb.LogRecords(ld) }

func (c countingRecordBackend) WriteRecords(ctx context.Context, r store.Records) error {
	if err := c.rb.WriteRecords(ctx, r); err != nil {
		return err
	}
	n := int64(len(r.Spans))
	for _, p := range r.Partials {
		n += p.Spans
	}
	c.spans.Add(n)
	return nil
}

// persistRequest is one request as payload_offload leaves it: 4 runs of 3 LLM calls (and a
// failing tool call in one), each LLM span with its input messages inline (2 KiB, under the
// offload threshold), its output inline (600 B) and its system instructions offloaded (a
// `_ref`); 21 spans.
func persistRequest(i int) ptrace.Traces {
	var runs []storetest.Run
	for r := 0; r < 4; r++ {
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("persist-%d-%d", i, r), Session: fmt.Sprintf("conv-%d", i%50), Service: "svc",
			Agent: "a", Model: "gpt-4.1", Start: time.Now().UnixNano(), LLMCalls: 3, ToolFail: r == 0})
	}
	td := storetest.Traces(runs...)
	in := `[{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("what is the weather in Lisbon ", 68) + `"}]}]`
	out := `[{"role":"assistant","parts":[{"type":"text","content":"` + strings.Repeat("sunny, 21 degrees ", 30) + `"}]}]`
	rss := td.ResourceSpans()
	for a := 0; a < rss.Len(); a++ {
		spans := rss.At(a).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			s := spans.At(k)
			if strings.HasPrefix(s.Name(), "chat") {
				s.Attributes().PutStr("gen_ai.input.messages", in)
				s.Attributes().PutStr("gen_ai.output.messages", out)
				s.Attributes().PutStr("gen_ai.system_instructions_ref", "file:///data/blobs/sha256/"+strings.Repeat("5e", 32)+".zst")
			}
		}
	}
	return td
}

// persistMode is one way of delivering the tiers.
type persistMode struct {
	name  string
	tiers map[string]any // the tiered exporter's hot/warm/cold delivery settings
	whole bool           // every tier given the whole request (before "persist once")
	trim  bool           // warm and cold given trimmed requests, not records built before the queue
	only  string         // write this tier only (the floor: what the store itself writes)
	conc  int            // requests sent concurrently (0: one at a time)
}

func persistModes() []persistMode {
	queue := func(flush string, minSize int) map[string]any {
		return map[string]any{"storage": "file_storage/queue", "queue_size": 100000,
			"batch": map[string]any{"flush_timeout": flush, "sizer": "items", "min_size": minSize}}
	}
	before := map[string]any{
		"hot":  map[string]any{"sending_queue": queue("200ms", 2048)},
		"warm": map[string]any{"sending_queue": queue("1s", 2048)},
		"cold": map[string]any{"sending_queue": queue("1s", 8192)},
	}
	after := map[string]any{
		"hot":  map[string]any{"sending_queue": map[string]any{"enabled": false}, "retry_on_failure": map[string]any{"enabled": false}, "timeout": "10s"},
		"warm": map[string]any{"sending_queue": queue("1s", 2048)},
		"cold": map[string]any{"sending_queue": queue("1s", 8192)},
	}
	return []persistMode{
		{name: "before=3_whole_queues", tiers: before, whole: true, trim: true},
		{name: "trimmed_queues", tiers: before, trim: true},
		{name: "hot_sync+trimmed_queues", tiers: after, trim: true},
		{name: "after=hot_sync+record_queues", tiers: after},
		{name: "floor=hot_sync_only", tiers: after, only: store.TierHot},
		{name: "before,8_concurrent", tiers: before, whole: true, trim: true, conc: 8},
		{name: "trimmed,8_concurrent", tiers: after, trim: true, conc: 8},
		{name: "after,8_concurrent", tiers: after, conc: 8},
	}
}

// BenchmarkPersistOnce delivers the same requests (21 spans each, shaped as payload_offload
// leaves them) to the three embedded tiers (SQLite hot and warm, Parquet cold) through real
// file_storage persistent queues, in three ways measured in the same run:
//
//   - before=3_whole_queues: each tier's queue persists the whole request (the old default);
//   - trimmed_queues: the warm and cold queues persist store.TrimTraces of it;
//   - hot_sync+trimmed_queues: the hot tier is written in the request (no queue), warm and cold
//     as above (config/default.yaml until the records queues);
//   - after=hot_sync+record_queues: the hot tier written in the request, the warm and cold
//     queues persist the tiers' records built before them (store.Records: summaries, session
//     partials), config/default.yaml;
//   - floor=hot_sync_only: the hot tier alone, written in the request: what storing the spans
//     costs at all;
//   - before, trimmed and after with 8 requests in flight at once (as a receiver serving several
//     clients): the hot tier written in the request takes one SQLite transaction per request.
//
// Each op is one request acknowledged; the timer runs until every tier has written every span.
// queue-B/span is what the queues persisted, disk-B/span every byte written by the process
// (/proc/self/io wchar: queues, SQLite files, Parquet) per span, cpu-ms/1k-spans the process's
// CPU time (user + system, getrusage) per 1,000 spans; allocs/op (-benchmem) counts the queues'
// and writers' goroutines too.
//
//	go test ./exporter/tieredexporter/ -run '^$' -bench PersistOnce -benchmem -benchtime 400x
func BenchmarkPersistOnce(b *testing.B) {
	for _, m := range persistModes() {
		b.Run(m.name, func(b *testing.B) { benchPersist(b, m) })
	}
}

func benchPersist(b *testing.B, m persistMode) {
	ctx := context.Background()
	dir := b.TempDir()
	host, st := storagetest.Start(b, storageOn(dir))
	fsf := filestorage.NewFactory()
	fscfg := fsf.CreateDefaultConfig().(*filestorage.Config)
	fscfg.Directory = filepath.Join(dir, "queue")
	fscfg.CreateDirectory = true
	ext, err := fsf.Create(ctx, extensiontest.NewNopSettings(fsf.Type()), fscfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := ext.Start(ctx, host); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ext.Shutdown(ctx) }()
	var queued atomic.Int64
	host[component.MustNewIDWithName("file_storage", "queue")] = countingStorage{Extension: ext.(storage.Extension), bytes: &queued}

	cfg := createDefaultConfig().(*Config)
	if err := confmap.NewFromStringMap(m.tiers).Unmarshal(cfg); err != nil {
		b.Fatal(err)
	}
	e := &tieredExporter{set: exportertest.NewNopSettings(metadata.Type), cfg: cfg, sig: signalTraces, keys: st.SessionKeys(),
		noRecords: m.trim}
	written := map[string]*atomic.Int64{}
	tiers := st.Tiers()
	if m.only != "" {
		tiers = []string{m.only}
	}
	for _, name := range tiers {
		be, err := st.Backend(name)
		if err != nil {
			b.Fatal(err)
		}
		written[name] = &atomic.Int64{}
		sending := map[string]TierSending{store.TierHot: cfg.hotSending(), store.TierWarm: cfg.warmSending(), store.TierCold: cfg.coldSending()}[name]
		var counted runagainstorageextension.Backend = countingBackend{Backend: be, spans: written[name]}
		if rb, ok := be.(runagainstorageextension.RecordBackend); ok {
			counted = countingRecordBackend{countingBackend: counted.(countingBackend), rb: rb}
		}
		if err := e.addTier(ctx, name, counted, sending); err != nil {
			b.Fatal(err)
		}
	}
	if m.whole {
		for i := range e.tiers {
			e.tiers[i].trim = false
		}
	}
	for _, c := range e.components() {
		if err := c.Start(ctx, host); err != nil {
			b.Fatal(err)
		}
	}
	reqs := make([]ptrace.Traces, 16)
	for i := range reqs {
		reqs[i] = persistRequest(i)
	}
	perReq := int64(reqs[0].SpanCount())
	_, w0, measured := benchtest.ProcIO()
	c0 := benchtest.CPUTime()
	b.ResetTimer()
	if m.conc == 0 {
		for i := 0; i < b.N; i++ {
			if err := e.ConsumeTraces(ctx, reqs[i%len(reqs)]); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < m.conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
					if err := e.ConsumeTraces(ctx, reqs[i%int64(len(reqs))]); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	want := perReq * int64(b.N)
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range tiers {
		for written[name].Load() < want {
			if time.Now().After(deadline) {
				b.Fatalf("%s tier wrote %d of %d spans in 2 minutes", name, written[name].Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	_, w1, _ := benchtest.ProcIO()
	c1 := benchtest.CPUTime()
	spans := float64(want)
	b.ReportMetric((c1-c0).Seconds()*1000/spans*1000, "cpu-ms/1k-spans")
	b.ReportMetric(float64(queued.Load())/spans, "queue-B/span")
	if measured {
		b.ReportMetric(float64(w1-w0)/spans, "disk-B/span")
	}
	b.ReportMetric(spans/b.Elapsed().Seconds(), "spans/s")
	for _, c := range e.components() {
		_ = c.Shutdown(ctx)
	}
}
