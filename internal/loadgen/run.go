// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// Stop reasons in Report.StoppedBy.
const (
	StoppedBySessions = "sessions"
	StoppedByMaxSpans = "max_spans"
	StoppedByDuration = "duration"
	StoppedByCancel   = "canceled"
)

// Latency is a summary of client-side export latencies in milliseconds: the wall time of each
// exporter ExportSpans call (one OTLP request, including the exporter's own retries).
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Report is the outcome of a Run.
type Report struct {
	Config Config `json:"config"`
	// StartUnixNano and EndUnixNano bound the run: from the first span generated to the last
	// export answered (after the final flush).
	StartUnixNano int64   `json:"start_unix_nano"`
	EndUnixNano   int64   `json:"end_unix_nano"`
	ElapsedSec    float64 `json:"elapsed_s"`
	StoppedBy     string  `json:"stopped_by"`
	Sessions      int64   `json:"sessions"` // sessions started
	Generated     Stats   `json:"generated"`
	// SpansSent counts spans the receiver acknowledged (not rejected in a partial success).
	SpansSent int64 `json:"spans_sent"`
	// SpansFailed counts spans of failed exports plus spans rejected in partial successes.
	SpansFailed int64 `json:"spans_failed"`
	Exports     int64 `json:"exports"`
	// ExportErrors counts export calls that returned an error (after the exporter's retries).
	ExportErrors int64 `json:"export_errors"`
	// Errors holds up to 10 distinct error messages.
	Errors []string `json:"errors,omitempty"`
	// Bytes is the size of the request messages as sent (after compression), without
	// transport framing or headers; retried requests count again.
	Bytes int64 `json:"bytes"`
	// UncompressedBytes is the protobuf size before compression (gRPC always; HTTP only
	// without compression, else 0).
	UncompressedBytes int64   `json:"uncompressed_bytes"`
	SpansPerSec       float64 `json:"spans_per_s"`
	MBPerSec          float64 `json:"mb_per_s"` // UncompressedBytes (else Bytes) per second, 1 MB = 1e6 bytes
	Latency           Latency `json:"latency"`
}

// Run generates traffic per cfg and sends it until the sessions are done, MaxSpans or Duration
// is reached or ctx is canceled, then flushes everything generated and returns the report.
// progress, if not nil, receives one line every progressEvery (0: never).
func Run(ctx context.Context, cfg Config, progress io.Writer, progressEvery time.Duration) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(r.noteError))

	agents := make([]*agent, cfg.Concurrency)
	for i := range agents {
		a, err := r.newAgent(ctx, i)
		if err != nil {
			for _, b := range agents[:i] {
				_ = b.tp.Shutdown(context.Background())
			}
			return nil, err
		}
		agents[i] = a
	}
	if cfg.Rate > 0 {
		burst := max(cfg.maxSpansPerTrace(), int(cfg.Rate/10))
		r.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
	}

	genCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		genCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	start := time.Now()
	r.stopProgress = make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil && progressEvery > 0 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			r.progressLoop(progress, progressEvery, start)
		}()
	}

	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(genCtx, a)
		}()
	}
	wg.Wait()

	// flush what was generated, even when the generation context ended
	flushCtx, cancel := context.WithTimeout(context.Background(), cfg.ExportTimeout+time.Minute)
	defer cancel()
	var shutdownErrs []error
	for _, a := range agents {
		if err := a.tp.Shutdown(flushCtx); err != nil {
			shutdownErrs = append(shutdownErrs, err)
		}
	}
	end := time.Now()
	close(r.stopProgress)
	pwg.Wait()

	rep := r.report(start, end)
	switch {
	case r.stoppedBy.Load() != nil:
		rep.StoppedBy = *r.stoppedBy.Load()
	case ctx.Err() != nil:
		rep.StoppedBy = StoppedByCancel
	case genCtx.Err() != nil:
		rep.StoppedBy = StoppedByDuration
	default:
		rep.StoppedBy = StoppedBySessions
	}
	if len(shutdownErrs) > 0 {
		return rep, fmt.Errorf("flushing the exporters: %w", errors.Join(shutdownErrs...))
	}
	return rep, nil
}

type runner struct {
	cfg     Config
	limiter *rate.Limiter

	nextSession atomic.Int64
	started     atomic.Int64
	reserved    atomic.Int64 // spans reserved against MaxSpans
	stoppedBy   atomic.Pointer[string]

	sent, failed, exports, exportErrs atomic.Int64
	bytes, rawBytes                   atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	errors    []string
	gen       Stats

	stopProgress chan struct{}
}

type agent struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

func (r *runner) newAgent(ctx context.Context, i int) (*agent, error) {
	cfg := &r.cfg
	var exp sdktrace.SpanExporter
	var err error
	switch cfg.Protocol {
	case ProtocolGRPC:
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpoint(cfg.Endpoint),
			otlptracegrpc.WithTimeout(cfg.ExportTimeout),
			otlptracegrpc.WithDialOption(grpc.WithStatsHandler(&byteCounter{r: r})),
		}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if cfg.Compression == "gzip" {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	case ProtocolHTTP:
		opts := []otlptracehttp.Option{
			otlptracehttp.WithEndpoint(cfg.Endpoint),
			otlptracehttp.WithTimeout(cfg.ExportTimeout),
			otlptracehttp.WithHTTPClient(&http.Client{Transport: &countingTransport{r: r, gzip: cfg.Compression == "gzip", next: http.DefaultTransport.(*http.Transport).Clone()}}),
		}
		if cfg.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if cfg.Compression == "gzip" {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP %s exporter for %s: %w", cfg.Protocol, cfg.Endpoint, err)
	}
	res := resource.NewWithAttributes("",
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("service.instance.id", "loadgen-"+strconv.Itoa(i)),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
		attribute.String("telemetry.sdk.language", "go"),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		// generated attributes are whole conversations: no limit on value length or count
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: -1, AttributeCountLimit: 128, EventCountLimit: 128,
			LinkCountLimit: 128, AttributePerEventCountLimit: 128, AttributePerLinkCountLimit: 128,
		}),
		sdktrace.WithBatcher(&countingExporter{r: r, next: exp},
			sdktrace.WithBlocking(), // never drop: generation waits for the collector
			sdktrace.WithMaxExportBatchSize(cfg.BatchSize),
			// a short queue: when the run stops, little is left to flush
			sdktrace.WithMaxQueueSize(2*cfg.BatchSize),
			sdktrace.WithBatchTimeout(200*time.Millisecond),
			sdktrace.WithExportTimeout(cfg.ExportTimeout+10*time.Second),
		),
	)
	return &agent{tp: tp, tracer: tp.Tracer("github.com/runagain/runagain/internal/loadgen")}, nil
}

// work runs sessions from the shared counter until a bound is reached.
func (r *runner) work(ctx context.Context, a *agent) {
	cfg := &r.cfg
	var local Stats
	defer func() {
		r.mu.Lock()
		r.gen.add(&local)
		r.mu.Unlock()
	}()
	for ctx.Err() == nil && r.stoppedBy.Load() == nil {
		idx := r.nextSession.Add(1) - 1
		if cfg.Sessions > 0 && idx >= cfg.Sessions {
			return
		}
		r.started.Add(1)
		s := NewSession(cfg, idx)
		st := s.Stats()
		for !s.Done() && ctx.Err() == nil && r.stoppedBy.Load() == nil {
			before := st
			specs := s.NextTurn(time.Now())
			st = s.Stats()
			if cfg.MaxSpans > 0 {
				n := int64(len(specs))
				if r.reserved.Add(n) > cfg.MaxSpans {
					r.reserved.Add(-n)
					reason := StoppedByMaxSpans
					r.stoppedBy.CompareAndSwap(nil, &reason)
					st = before // not sent
					break
				}
			}
			if r.limiter != nil {
				// fails at once when the wait would pass the deadline: the run is over
				if err := r.limiter.WaitN(ctx, len(specs)); err != nil {
					if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
						reason := StoppedByDuration
						r.stoppedBy.CompareAndSwap(nil, &reason)
					}
					st = before
					local.add(&st)
					return
				}
			}
			emit(a.tracer, specs)
		}
		local.add(&st)
	}
}

// emit creates the spans of one trace through the SDK with their recorded timestamps.
func emit(tracer trace.Tracer, specs []SpanSpec) {
	spans := make([]trace.Span, len(specs))
	ctxs := make([]context.Context, len(specs))
	for i := range specs {
		sp := &specs[i]
		parent := context.Background()
		if sp.Parent >= 0 {
			parent = ctxs[sp.Parent]
		}
		ctxs[i], spans[i] = tracer.Start(parent, sp.Name,
			trace.WithSpanKind(sp.Kind), trace.WithTimestamp(sp.Start), trace.WithAttributes(sp.Attrs...))
		if sp.ExceptionType != "" {
			spans[i].AddEvent("exception", trace.WithTimestamp(sp.End), trace.WithAttributes(
				attribute.String("exception.type", sp.ExceptionType),
				attribute.String("exception.message", sp.ExceptionMessage)))
		}
		if sp.Status != 0 {
			spans[i].SetStatus(sp.Status, sp.StatusMessage)
		}
	}
	// children first, the root last, as an instrumented agent ends them
	for i := len(specs) - 1; i >= 0; i-- {
		spans[i].End(trace.WithTimestamp(specs[i].End))
	}
}

var rejectedRE = regexp.MustCompile(`\((\d+) spans rejected\)`)

func (r *runner) noteError(err error) {
	if err == nil {
		return
	}
	msg := err.Error()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errors) < 10 && !slices.Contains(r.errors, msg) {
		r.errors = append(r.errors, msg)
	}
}

// countingExporter measures each export and counts acknowledged and failed spans.
type countingExporter struct {
	r    *runner
	next sdktrace.SpanExporter
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	t := time.Now()
	err := e.next.ExportSpans(ctx, spans)
	d := time.Since(t)
	r := e.r
	r.exports.Add(1)
	n := int64(len(spans))
	if err != nil {
		r.exportErrs.Add(1)
		r.noteError(err)
		if m := rejectedRE.FindStringSubmatch(err.Error()); m != nil && strings.Contains(err.Error(), "partial success") && !strings.Contains(err.Error(), "rpc error") {
			rej, _ := strconv.ParseInt(m[1], 10, 64)
			rej = min(rej, n)
			r.failed.Add(rej)
			r.sent.Add(n - rej)
		} else {
			r.failed.Add(n)
		}
	} else {
		r.sent.Add(n)
	}
	r.mu.Lock()
	r.latencies = append(r.latencies, d)
	r.mu.Unlock()
	return err
}

func (e *countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// byteCounter is a gRPC stats handler counting outgoing message sizes.
type byteCounter struct{ r *runner }

func (b *byteCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (b *byteCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if p, ok := s.(*stats.OutPayload); ok {
		sent := p.CompressedLength
		if sent == 0 {
			sent = p.Length
		}
		b.r.bytes.Add(int64(sent))
		b.r.rawBytes.Add(int64(p.Length))
	}
}
func (b *byteCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (b *byteCounter) HandleConn(context.Context, stats.ConnStats) {}

// countingTransport counts HTTP request body sizes.
type countingTransport struct {
	r    *runner
	gzip bool
	next http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case req.ContentLength > 0:
		t.r.bytes.Add(req.ContentLength)
		if !t.gzip {
			t.r.rawBytes.Add(req.ContentLength)
		}
	case req.Body != nil && req.Body != http.NoBody:
		// a streamed (gzip) body: count what is read from it
		req.Body = &countingBody{ReadCloser: req.Body, n: &t.r.bytes}
	}
	return t.next.RoundTrip(req)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (r *runner) progressLoop(w io.Writer, every time.Duration, start time.Time) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-r.stopProgress:
			return
		case now := <-tk.C:
			el := now.Sub(start).Seconds()
			sent := r.sent.Load()
			fmt.Fprintf(w, "%6.1fs  spans sent %d (%.0f/s)  failed %d  %.1f MB\n",
				el, sent, float64(sent)/el, r.failed.Load(), float64(r.rawBytes.Load())/1e6)
		}
	}
}

func (r *runner) report(start, end time.Time) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	el := end.Sub(start).Seconds()
	rep := &Report{
		Config:            r.cfg,
		StartUnixNano:     start.UnixNano(),
		EndUnixNano:       end.UnixNano(),
		ElapsedSec:        el,
		Sessions:          r.started.Load(),
		Generated:         r.gen,
		SpansSent:         r.sent.Load(),
		SpansFailed:       r.failed.Load(),
		Exports:           r.exports.Load(),
		ExportErrors:      r.exportErrs.Load(),
		Errors:            slices.Clone(r.errors),
		Bytes:             r.bytes.Load(),
		UncompressedBytes: r.rawBytes.Load(),
		Latency:           summarize(r.latencies),
	}
	if el > 0 {
		rep.SpansPerSec = float64(rep.SpansSent) / el
		b := rep.UncompressedBytes
		if b == 0 {
			b = rep.Bytes
		}
		rep.MBPerSec = float64(b) / 1e6 / el
	}
	return rep
}

// summarize returns nearest-rank percentiles of ds.
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	return Latency{Count: len(s), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: ms(s[len(s)-1])}
}

// WriteText prints the report for people.
func (rep *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "loadgen: %s %s, stopped by %s after %.1fs\n", rep.Config.Protocol, rep.Config.Endpoint, rep.StoppedBy, rep.ElapsedSec)
	fmt.Fprintf(w, "  sessions %d  traces %d  spans generated %d\n", rep.Sessions, rep.Generated.Traces, rep.Generated.Spans)
	fmt.Fprintf(w, "  spans sent %d  failed %d  exports %d  export errors %d\n", rep.SpansSent, rep.SpansFailed, rep.Exports, rep.ExportErrors)
	fmt.Fprintf(w, "  bytes %d (uncompressed %d)\n", rep.Bytes, rep.UncompressedBytes)
	fmt.Fprintf(w, "  rate %.0f spans/s  %.2f MB/s\n", rep.SpansPerSec, rep.MBPerSec)
	fmt.Fprintf(w, "  export latency ms: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d exports)\n",
		rep.Latency.P50, rep.Latency.P90, rep.Latency.P99, rep.Latency.Max, rep.Latency.Count)
	fmt.Fprintf(w, "  tool errors %d  finish_reason length %d  runaway turns %d  planted %v\n",
		rep.Generated.ToolErrors, rep.Generated.LengthStops, rep.Generated.LoopTurns, rep.Generated.Planted)
	if len(rep.Generated.FaultRuns) > 0 {
		keys := make([]string, 0, len(rep.Generated.FaultRuns))
		for k := range rep.Generated.FaultRuns {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "  runs with planted faults:")
		for _, k := range keys {
			fmt.Fprintf(w, " %s=%d", k, rep.Generated.FaultRuns[k])
		}
		fmt.Fprintln(w)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
}
