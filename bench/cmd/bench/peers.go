// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The storage peers of runagain: what a team would run instead to keep every span.
//
//	file    (d) otlp -> batch -> file: the contrib file exporter, OTLP protobuf, each request
//	        zstd-compressed, one file on local disk; the collector otelcol-bench-file is built
//	        from bench/filecollector/builder-config.yaml (why a collector of its own: see there).
//	jaeger  (e) Jaeger v2 (cmd/jaeger v1.76.0, built from the tools module bench/jaeger) with its
//	        Badger store: otlp -> batch -> jaeger_storage_exporter, and the query service as a
//	        platform team runs it (no UI traffic during the run).

// productionMemoryLimiter is the memory_limiter both peers run first in their pipeline, as their
// production guides ask (Jaeger's "Performance tuning" and the collector's own scaling docs: a
// memory_limiter before batching), with runagain's own settings (config/default.yaml) so the rows
// share one memory rule.
func productionMemoryLimiter() map[string]any {
	return map[string]any{"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20}
}

// jaegerQueueConsumers is the jaeger_storage_exporter's sending queue width in production
// (Jaeger's performance tuning guide: a queue with 10 consumers, the exporterhelper default),
// so Badger writes from 10 goroutines instead of the pipeline's own.
const jaegerQueueConsumers = 10

// fileSpansName is the file exporter's output file under the data directory.
const fileSpansName = "traces.otlp.zst"

// fileConfig is pipeline (d): otlp -> memory_limiter -> batch -> file (proto, zstd). The contrib
// file exporter has no sending queue of its own (it writes inside the batch's call).
func fileConfig(p ports, dataDir string) map[string]any {
	cfg := plainConfig(p, false)
	cfg["processors"].(map[string]any)["memory_limiter"] = productionMemoryLimiter()
	cfg["service"].(map[string]any)["pipelines"].(map[string]any)["traces"].(map[string]any)["processors"] = []any{"memory_limiter", "batch"}
	cfg["exporters"] = map[string]any{"file": map[string]any{
		"path":        filepath.Join(dataDir, fileSpansName),
		"format":      "proto",
		"compression": "zstd",
	}}
	svc := cfg["service"].(map[string]any)
	svc["pipelines"].(map[string]any)["traces"].(map[string]any)["exporters"] = []any{"file"}
	return cfg
}

// jaegerConfig is pipeline (e): Jaeger v2's config-badger.yaml (cmd/jaeger in v1.76.0) with every
// listener on a free loopback port, the Badger directories under dataDir, the span TTL of
// runagain's hot tier (7 days), no archive store and no self-tracing; with the production
// settings of Jaeger's tuning guide: memory_limiter first, and the storage exporter's sending
// queue with jaegerQueueConsumers consumers.
func jaegerConfig(p ports, dataDir string, free func() (int, error)) (map[string]any, error) {
	var qhttp, qgrpc int
	for _, dst := range []*int{&qhttp, &qgrpc} {
		n, err := free()
		if err != nil {
			return nil, err
		}
		*dst = n
	}
	badgerDir := filepath.Join(dataDir, "badger")
	return map[string]any{
		"extensions": map[string]any{
			"healthcheckv2": map[string]any{"use_v2": true, "http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.health)}},
			"pprof":         map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.pprof)},
			"jaeger_query": map[string]any{
				"storage":        map[string]any{"traces": "bench_store"},
				"enable_tracing": false,
				"http":           map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", qhttp)},
				"grpc":           map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", qgrpc)},
			},
			"jaeger_storage": map[string]any{"backends": map[string]any{"bench_store": map[string]any{"badger": map[string]any{
				"directories": map[string]any{"keys": badgerDir, "values": badgerDir},
				"ephemeral":   false,
				"ttl":         map[string]any{"spans": "168h"},
			}}}},
		},
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{
			"grpc": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.grpc), "max_recv_msg_size_mib": 64},
			"http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.http)},
		}}},
		"processors": map[string]any{"batch": map[string]any{}, "memory_limiter": productionMemoryLimiter()},
		"exporters": map[string]any{"jaeger_storage_exporter": map[string]any{
			"trace_storage": "bench_store",
			// queue_size is required once the block is given (Jaeger rejects 0 at start):
			// exporterhelper's own default, 1000 requests.
			"queue": map[string]any{"enabled": true, "num_consumers": jaegerQueueConsumers, "queue_size": 1000},
		}},
		"service": map[string]any{
			"extensions": []any{"jaeger_storage", "jaeger_query", "healthcheckv2", "pprof"},
			"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []any{"otlp"}, "processors": []any{"memory_limiter", "batch"}, "exporters": []any{"jaeger_storage_exporter"},
			}},
			"telemetry": telemetry(p),
		},
	}, nil
}

// countFileSpans reads the file exporter's output (proto format with zstd: each request is a
// 4-byte big-endian length followed by that many bytes of zstd-compressed OTLP protobuf, see
// fileexporter's exportMessageAsBuffer) and returns the spans and sessions
// (gen_ai.conversation.id) it holds.
func countFileSpans(path string) (spans, sessions int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return 0, 0, err
	}
	defer dec.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var unm ptrace.ProtoUnmarshaler
	seen := map[string]struct{}{}
	var hdr [4]byte
	var buf, plain []byte
	for n := 0; ; n++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return spans, int64(len(seen)), fmt.Errorf("%s: record %d: %w", path, n, err)
		}
		size := binary.BigEndian.Uint32(hdr[:])
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return spans, int64(len(seen)), fmt.Errorf("%s: record %d: %w", path, n, err)
		}
		plain, err = dec.DecodeAll(buf, plain[:0])
		if err != nil {
			return spans, int64(len(seen)), fmt.Errorf("%s: record %d: zstd: %w", path, n, err)
		}
		td, err := unm.UnmarshalTraces(plain)
		if err != nil {
			return spans, int64(len(seen)), fmt.Errorf("%s: record %d: %w", path, n, err)
		}
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j).Spans()
				for k := 0; k < ss.Len(); k++ {
					spans++
					if v, ok := ss.At(k).Attributes().Get("gen_ai.conversation.id"); ok {
						seen[v.Str()] = struct{}{}
					}
				}
			}
		}
	}
	return spans, int64(len(seen)), nil
}

// exporterSentSpans reads the collector's own metrics (the Prometheus endpoint of its telemetry)
// and returns otelcol_exporter_sent_spans_total of the named exporter: the spans exporterhelper
// saw the exporter accept without error (for Jaeger's storage exporter, written to Badger).
func exporterSentSpans(ctx context.Context, metricsAddr, exporter string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", metricsAddr, resp.Status)
	}
	return parseSentSpans(resp.Body, exporter)
}

// parseSentSpans sums the otelcol_exporter_sent_spans_total samples labelled exporter="name" in
// Prometheus text exposition format.
func parseSentSpans(r io.Reader, exporter string) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	label := `exporter="` + exporter + `"`
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "otelcol_exporter_sent_spans_total{") || !strings.Contains(line, label) {
			continue
		}
		i := strings.LastIndexByte(line, '}')
		f := strings.Fields(line[i+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("otelcol_exporter_sent_spans_total: %q: %w", f[0], err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no otelcol_exporter_sent_spans_total for exporter %q", exporter)
	}
	return int64(sum), nil
}
