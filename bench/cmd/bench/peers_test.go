// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"gopkg.in/yaml.v3"
)

// The file exporter's proto+zstd framing (4-byte big-endian length, then one zstd frame of
// OTLP protobuf per request) is decoded back into spans and sessions; a cut-off record is an
// error naming the record, never a silent short count.
func TestCountFileSpans(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var file []byte
	var m ptrace.ProtoMarshaler
	for req := range 3 {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for i := range 4 {
			sp := ss.AppendEmpty()
			sp.SetName("chat")
			if i == 0 {
				sp.Attributes().PutStr("gen_ai.conversation.id", []string{"s1", "s2", "s1"}[req])
			}
		}
		b, err := m.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		z := enc.EncodeAll(b, nil)
		file = binary.BigEndian.AppendUint32(file, uint32(len(z)))
		file = append(file, z...)
	}
	path := filepath.Join(t.TempDir(), fileSpansName)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	spans, sessions, err := countFileSpans(path)
	if err != nil || spans != 12 || sessions != 2 {
		t.Fatalf("countFileSpans = %d spans, %d sessions, %v; want 12, 2, nil", spans, sessions, err)
	}
	if err := os.WriteFile(path, file[:len(file)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := countFileSpans(path); err == nil || !strings.Contains(err.Error(), "record 2") {
		t.Fatalf("truncated file: err = %v, want an error naming record 2", err)
	}
}

// Allocated size counts whole blocks: a 1-byte file takes at least one block, a sparse file
// of 64 MiB takes almost nothing.
func TestDirSizesCountsAllocatedBlocks(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"hot.db", "queue/q1", "blobs/ab/cd"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	hot, queue, other := dirSizes(dir)
	if hot.Apparent != 1 || queue.Apparent != 1 || other.Apparent != 1+64<<20 || other.Files != 2 {
		t.Fatalf("apparent: hot %+v queue %+v other %+v", hot, queue, other)
	}
	if hot.Disk < 512 || queue.Disk < 512 {
		t.Errorf("a 1-byte file occupies no block: hot %+v queue %+v", hot, queue)
	}
	if other.Disk >= 1<<20 {
		t.Errorf("a sparse 64 MiB file counted as %d bytes on disk", other.Disk)
	}
	all := dirUsage(dir)
	if all.Files != 4 || all.Disk != hot.Disk+queue.Disk+other.Disk {
		t.Errorf("dirUsage = %+v", all)
	}
}

// A sleeping process is idle within a window; a busy one is not, and the wait ends at the
// timeout.
func TestCPUUntilIdle(t *testing.T) {
	rule := idleRule{Window: 400 * time.Millisecond, Fraction: 0.05, Timeout: 5 * time.Second, Interval: 50 * time.Millisecond}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Skipf("sleep: %v", err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	_, waited, idle, err := cpuUntilIdle(context.Background(), sleeper.Process.Pid, rule)
	if err != nil || !idle || waited > 3*time.Second {
		t.Fatalf("sleeping process: idle %v after %v, %v", idle, waited, err)
	}

	// this process, kept busy by a goroutine
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		x := 0
		for {
			select {
			case <-stop:
				_ = x
				return
			default:
				for i := 0; i < 1_000_000; i++ {
					x += i ^ (x >> 3)
				}
			}
		}
	}()
	rule.Timeout = time.Second
	rule.Fraction = 0.001 // any clock tick counts, however loaded the machine is
	c0, _ := cpuSeconds(os.Getpid())
	c1, waited, idle, err := cpuUntilIdle(context.Background(), os.Getpid(), rule)
	close(stop)
	<-done
	if err != nil || idle || waited < time.Second || c1 <= c0 {
		t.Fatalf("busy process: idle %v after %v (cpu %v -> %v), %v", idle, waited, c0, c1, err)
	}
}

// The proxy counts requests by method and the object bytes of each PUT (the decoded length of
// an aws-chunked body), and forwards everything.
func TestCountingProxy(t *testing.T) {
	var got []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got = append(got, r.Method+" "+r.URL.Path)
		if r.URL.Path == "/fail/x" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer backend.Close()
	p, err := startCountingProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	do := func(method, path, body string, hdr map[string]string) {
		req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do(http.MethodPut, "/b/k1", "12345", nil)
	do(http.MethodPut, "/b/k2", strings.Repeat("c", 100), map[string]string{"X-Amz-Decoded-Content-Length": "64"})
	do(http.MethodPost, "/b/k3?uploads", "", nil)
	do(http.MethodGet, "/b/k1", "", nil)
	do(http.MethodGet, "/b", "", nil)
	do(http.MethodHead, "/b/k1", "", nil)
	do(http.MethodDelete, "/b/k1", "", nil)
	do(http.MethodGet, "/fail/x", "", nil)
	c := p.counts()
	if c.Put != 2 || c.Post != 1 || c.Get != 2 || c.List != 1 || c.Head != 1 || c.Delete != 1 || c.PutBytes != 69 || c.Errors5xx != 1 {
		t.Fatalf("counts = %+v", c)
	}
	if len(got) != 8 {
		t.Fatalf("backend saw %q", got)
	}
}

// Pipeline (e) listens on loopback only, keeps Badger under the data directory and names one
// store everywhere; pipeline (d) writes zstd protobuf under the data directory.
func TestPeerConfigs(t *testing.T) {
	next := 42000
	free := func() (int, error) { next++; return next, nil }
	p := ports{grpc: 41001, http: 41002, health: 41003, telemetry: 41004, pprof: 41005}
	cfg, err := jaegerConfig(p, "/data/dir", free)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	endpoints := 0
	walk = func(v any) {
		switch m := v.(type) {
		case map[string]any:
			for k, sub := range m {
				if k == "endpoint" {
					endpoints++
					if !strings.HasPrefix(sub.(string), "127.0.0.1:") {
						t.Errorf("endpoint %v is not loopback", sub)
					}
				}
				walk(sub)
			}
		case []any:
			for _, sub := range m {
				walk(sub)
			}
		}
	}
	walk(cfg)
	if endpoints != 6 { // otlp grpc+http, health, pprof, query http+grpc
		t.Errorf("%d endpoints in\n%s", endpoints, out)
	}
	for _, want := range []string{"/data/dir/badger", "trace_storage: bench_store", "traces: bench_store", "enable_tracing: false", "port: 41004",
		"num_consumers: 10", "memory_limiter", "limit_percentage: 80"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("jaeger config lacks %q:\n%s", want, out)
		}
	}
	fc := fileConfig(p, "/data/dir")
	fe := fc["exporters"].(map[string]any)["file"].(map[string]any)
	if fe["path"] != "/data/dir/"+fileSpansName || fe["compression"] != "zstd" || fe["format"] != "proto" {
		t.Errorf("file exporter config %v", fe)
	}
	if got := fc["service"].(map[string]any)["pipelines"].(map[string]any)["traces"].(map[string]any)["processors"]; len(got.([]any)) != 2 || got.([]any)[0] != "memory_limiter" {
		t.Errorf("file pipeline processors %v: want memory_limiter first", got)
	}
	if got := fc["service"].(map[string]any)["pipelines"].(map[string]any)["traces"].(map[string]any)["exporters"]; len(got.([]any)) != 1 || got.([]any)[0] != "file" {
		t.Errorf("file pipeline exporters %v", got)
	}

	// the runagain configuration's payload bucket moves to the proxy
	rc, _, err := runagainConfig(filepath.Join("..", "..", "..", "config", "default.yaml"), p, free)
	if err != nil {
		t.Fatal(err)
	}
	if err := setPayloadURL(rc, s3URL("127.0.0.1:9", "payloads/")); err != nil {
		t.Fatal(err)
	}
	u := rc["extensions"].(map[string]any)["runagain_storage"].(map[string]any)["payloads"].(map[string]any)["url"].(string)
	if !strings.HasPrefix(u, "s3://"+minioBucket+"?") || !strings.Contains(u, "endpoint=http%3A%2F%2F127.0.0.1%3A9") {
		t.Errorf("payload url %q", u)
	}
	if err := setPayloadURL(map[string]any{}, "s3://x"); err == nil {
		t.Error("a configuration without runagain_storage was accepted")
	}
}

// Ratios are c over each other row, and bytes on disk per session; the targets block says met
// or missed for each target with the measured values.
func TestRatiosAndTargets(t *testing.T) {
	yes := true
	rows := []*Result{
		{Pipeline: "baseline", SpansPerSec: 40000, CPUPer1k: 0.01, PeakRSSMB: 200},
		{Pipeline: "runagain", SpansPerSec: 12000, CPUPer1k: 0.07, PeakRSSMB: 300, Sessions: 100, SpansSent: 4000,
			Disk: &usage{Disk: 10e6}, DiskPerSesB: 1e5, ZeroLoss: &yes, HotSpans: 4000, StorageBytesPerSes: 90000},
		{Pipeline: "jaeger", SpansPerSec: 9000, CPUPer1k: 0.39, PeakRSSMB: 400, Sessions: 100, Disk: &usage{Disk: 50e6}, DiskPerSesB: 5e5},
		{Pipeline: "file", SpansPerSec: 30000, CPUPer1k: 0.02, PeakRSSMB: 150, Sessions: 100, Disk: &usage{Disk: 5e6}, DiskPerSesB: 5e4},
		{Pipeline: "runagain-minio", SpansSent: 4000, S3: &s3Counts{Put: 3, Post: 0, PutBytes: 24 << 20}},
	}
	r := ratios(rows)
	near := func(k string, want float64) {
		if got, ok := r[k]; !ok || got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	near("c/a spans_per_s", 0.3)
	near("c/a cpu_per_span", 7)
	near("c/e disk_per_session", 0.2)
	near("c/d disk_per_session", 2)
	near("c/e spans_per_s", 12000.0/9000)
	if _, ok := r["c/a disk_per_session"]; ok {
		t.Error("the baseline stores nothing: no disk ratio")
	}
	got := targets(&Results{Pipelines: rows, Ratios: r})
	for _, want := range []string{"c/a spans/s >= 0.25 (goal 0.5): 0.30, met", "7.0× the baseline's 0.010, met",
		"below Jaeger's: 0.070 against 0.390, met", "(c/e 0.20), met", "peak RSS <= 346 MB: 300 MB, met",
		"4000 of 4000, met", "storage per session <= 160270 bytes (before the redesign): 90000, met", "3 PUT-class requests for 24.0 MiB (at most 3 allowed; 1.00 per 8 MiB, 0.75 per 1,000 spans), met"} {
		if !strings.Contains(got, want) {
			t.Errorf("targets lack %q:\n%s", want, got)
		}
	}
	rows[1].PeakRSSMB = 400
	rows[4].S3 = &s3Counts{Put: 2, PutBytes: 3 << 20} // two small packs where one would do
	got = targets(&Results{Pipelines: rows, Ratios: ratios(rows)})
	for _, want := range []string{"400 MB, MISSED", "2 PUT-class requests for 3.0 MiB (at most 1 allowed; 5.33 per 8 MiB, 0.50 per 1,000 spans), MISSED"} {
		if !strings.Contains(got, want) {
			t.Errorf("a missed target is not called missed (%q):\n%s", want, got)
		}
	}
}

func TestParseSentSpans(t *testing.T) {
	text := `# HELP otelcol_exporter_sent_spans_total Number of spans successfully sent to destination.
# TYPE otelcol_exporter_sent_spans_total counter
otelcol_exporter_sent_spans_total{exporter="jaeger_storage_exporter",otel_scope_name="x"} 2068
otelcol_exporter_sent_spans_total{exporter="debug",otel_scope_name="x"} 7
otelcol_exporter_sent_spans_total{exporter="jaeger_storage_exporter",otel_scope_name="y"} 1.5e+01
otelcol_receiver_accepted_spans_total{receiver="otlp"} 9999
`
	n, err := parseSentSpans(strings.NewReader(text), "jaeger_storage_exporter")
	if err != nil || n != 2083 {
		t.Fatalf("parseSentSpans = %d, %v; want 2083", n, err)
	}
	if _, err := parseSentSpans(strings.NewReader(text), "file"); err == nil {
		t.Fatal("an exporter without samples gave no error")
	}
}

// TestJaegerConfigValidates has the Jaeger binary (`make bench` builds it into bin/; the test
// skips without it) validate pipeline (e)'s configuration: a setting Jaeger refuses at start, such
// as a sending queue without queue_size, fails here instead of in every bench run's row (e).
func TestJaegerConfigValidates(t *testing.T) {
	bin := filepath.Join("..", "..", "..", "bin", "jaeger")
	if dir := os.Getenv("RUNAGAIN_BIN_DIR"); dir != "" {
		bin = filepath.Join(dir, "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Jaeger binary at %s (make bench builds it)", bin)
	}
	next := 43000
	free := func() (int, error) { next++; return next, nil }
	cfg, err := jaegerConfig(ports{grpc: 41001, http: 41002, health: 41003, telemetry: 41004, pprof: 41005}, t.TempDir(), free)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(bin, "validate", "--config", path).CombinedOutput(); err != nil {
		t.Fatalf("jaeger validate: %v\n%s", err, msg)
	}
}
