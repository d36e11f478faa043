// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cenkalti/backoff/v5"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/payloadref/writer"
	"github.com/runagain/runagain/processor/payloadoffloadprocessor/internal/metadata"
)

// FailedKeysAttr marks a span or log record whose values stayed inline because storage failed
// (on_failure: keep_inline): a string slice of the keys concerned ("log.body" for a log body).
const FailedKeysAttr = "runagain.payload_offload.failed_keys"

// bodyKey names a log body in FailedKeysAttr.
const bodyKey = "log.body"

type offloader struct {
	cfg    *Config
	logger *zap.Logger
	tb     *metadata.TelemetryBuilder
	keys   *keyMatcher
	split  *keyMatcher

	// breaker stops trying storage for storage.cooldown after a batch failed (nil when the
	// cool-down is 0); see newBreaker.
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu    sync.Mutex
	store *writer.Store // the runagain_storage extension's, between start and shutdown
}

var (
	// errCircuitOpen is the error of values not tried because storage failed recently.
	errCircuitOpen = errors.New("storage circuit open: storage failed recently and is not tried until storage.cooldown has passed")
	// errProbing is the error of values not tried while another batch probes storage.
	errProbing = errors.New("storage circuit half-open: another batch is probing storage")
	// errCallerGone reports a batch whose caller gave up: it says nothing about storage.
	errCallerGone = errors.New("caller's context done")
)

// errBatchGaveUp fails the values of a batch not yet stored once another value of the batch
// failed after its whole retry.
var errBatchGaveUp = errors.New("storage failed for another value of this batch")

func newOffloader(cfg *Config, set component.TelemetrySettings) (*offloader, error) {
	keys, err := newKeyMatcher(cfg.Keys)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	split, err := newKeyMatcher(cfg.SplitKeys)
	if err != nil {
		return nil, fmt.Errorf("split_keys: %w", err)
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	o := &offloader{cfg: cfg, logger: set.Logger, tb: tb, keys: keys, split: split}
	if cfg.Storage.Cooldown > 0 {
		o.breaker = o.newBreaker()
	}
	return o, nil
}

// newBreaker returns the storage circuit breaker (github.com/sony/gobreaker). One request is one
// batch's storage work: a batch with any value failing its whole retry opens the circuit; while
// open (storage.cooldown) batches do not touch storage and their values fail at once
// (on_failure applies without waiting); then the circuit is half-open and the next batch
// probes storage (batches meanwhile fail at once): success closes it, failure opens it again.
// A batch whose caller gave up counts neither way. Transitions are logged and counted
// (processor_payload_offload_storage_circuit_transitions, attribute state).
func (o *offloader) newBreaker() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "payload_offload storage",
		MaxRequests: 1,
		Timeout:     o.cfg.Storage.Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
		IsExcluded:  func(err error) bool { return errors.Is(err, errCallerGone) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			o.tb.ProcessorPayloadOffloadStorageCircuitTransitions.Add(context.Background(), 1,
				metric.WithAttributes(attribute.String("state", to.String())))
			fields := []zap.Field{zap.Stringer("from", from), zap.Stringer("to", to), zap.Duration("cooldown", o.cfg.Storage.Cooldown)}
			switch to {
			case gobreaker.StateOpen:
				o.logger.Warn("payload_offload: storage circuit open: storage is not tried until the cooldown has passed; values meanwhile follow on_failure", fields...)
			case gobreaker.StateHalfOpen:
				o.logger.Info("payload_offload: storage circuit half-open: the next batch probes storage", fields...)
			default:
				o.logger.Info("payload_offload: storage circuit closed: storage works again", fields...)
			}
		},
	})
}

// start takes the payload store of the runagain_storage extension (storage.extension, or the
// only one): the extension opened it, shares it with every instance and the payload janitor, and
// closes it after the pipelines.
func (o *offloader) start(_ context.Context, host component.Host) error {
	st, err := runagainstorageextension.Find(host, o.cfg.Storage.Extension)
	if err != nil {
		return fmt.Errorf("storage.extension: %w", err)
	}
	if st == nil {
		return errors.New("storage.extension: no runagain_storage extension: add one with payloads::url " +
			"(e.g. file:///var/lib/runagain/blobs?create_dir=true, s3://bucket) under `extensions` and `service::extensions`")
	}
	s, err := st.PayloadStore()
	if err != nil {
		return fmt.Errorf("storage.extension: %w", err)
	}
	o.mu.Lock()
	o.store = s
	o.mu.Unlock()
	return nil
}

func (o *offloader) shutdown(context.Context) error {
	o.tb.Shutdown()
	o.mu.Lock()
	o.store = nil // the extension's: it closes it
	o.mu.Unlock()
	return nil
}

// candidate is one value to move: attribute key of attrs, or the body of a log record.
type candidate struct {
	attrs pcommon.Map   // holds the attribute (or, for a body, receives LogBodyRefKey)
	key   string        // attribute key; "" for a log body
	body  pcommon.Value // the log body when key == ""
	mark  pcommon.Map   // attributes of the span or log record to mark on failure
	job   *job
}

type jobKey struct {
	value string
	split bool
}

// job stores one distinct value of a batch (identical values share one job).
type job struct {
	jobKey
	stream string // the value's stream (see streamOf), of its first candidate
	n      int    // candidates sharing it
	res    writer.PutResult
	err    error
}

// batch collects the candidates of one ConsumeTraces/ConsumeLogs call.
type batch struct {
	o     *offloader
	cands []*candidate
	jobs  map[jobKey]*job
	order []*job
}

func (b *batch) add(attrs pcommon.Map, key string, value string, body pcommon.Value, mark pcommon.Map, split bool, stream string) {
	k := jobKey{value: value, split: split}
	j, ok := b.jobs[k]
	if !ok {
		j = &job{jobKey: k}
		if split && stream != "" {
			j.stream = stream + "\x00" + key
		}
		b.jobs[k] = j
		b.order = append(b.order, j)
	}
	j.n++
	b.cands = append(b.cands, &candidate{attrs: attrs, key: key, body: body, mark: mark, job: j})
}

// streamKeys are the attributes naming the conversation a span or log record belongs to (the
// session keys of docs/architecture.md's contract); streamOf uses the first present.
var streamKeys = [...]string{"gen_ai.conversation.id", "session.id"}

// streamOf names the stream of the values of a span or log record (attrs): its conversation, or
// without one its trace. A chat call resends its conversation's history, so the value of an
// attribute usually extends the one of the conversation's previous call, which
// writer.Batch.PutStream then does not hash and parse again. Only a hint: a value that does
// not extend its stream's previous one is stored the same way.
func streamOf(attrs pcommon.Map, trace pcommon.TraceID) string {
	for _, k := range streamKeys {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return v.Str()
		}
	}
	if trace.IsEmpty() {
		return ""
	}
	return string(trace[:])
}

// scanAttrs adds the offloadable attributes of attrs; mark (the span's or log record's
// attributes) is where failures are recorded and, with trace, names the values' stream
// (streamOf). The stream is looked up at the first candidate only: most spans have none, and
// streamOf scans mark's attributes.
func (b *batch) scanAttrs(attrs, mark pcommon.Map, trace pcommon.TraceID) {
	stream, named := "", false
	attrs.Range(func(k string, v pcommon.Value) bool {
		if v.Type() != pcommon.ValueTypeStr || len(v.Str()) < b.o.cfg.MinSize || ref.IsRefKey(k) || !b.o.keys.Match(k) {
			return true
		}
		if _, exists := attrs.Get(k + ref.RefSuffix); exists {
			return true // an SDK upload hook (or we) already stored it: leave both untouched
		}
		if !named {
			stream, named = streamOf(mark, trace), true
		}
		b.add(attrs, k, v.Str(), pcommon.Value{}, mark, b.o.split.Match(k), stream)
		return true
	})
}

// maxBodyDepth bounds the nesting scanBodyMap descends into (maps and slices of maps).
const maxBodyDepth = 16

// scanBodyMap adds the string values of at least min_size bytes found in a Map log body, at any
// depth (nested maps, and maps inside slices such as tool_calls); mark is the log record's
// attributes, where failures are recorded.
func (b *batch) scanBodyMap(m, mark pcommon.Map, depth int) {
	if depth > maxBodyDepth {
		return
	}
	m.Range(func(k string, v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			if len(v.Str()) < b.o.cfg.MinSize || ref.IsRefKey(k) {
				return true
			}
			if _, exists := m.Get(k + ref.RefSuffix); exists {
				return true
			}
			b.add(m, k, v.Str(), pcommon.Value{}, mark, false, "")
		case pcommon.ValueTypeMap:
			b.scanBodyMap(v.Map(), mark, depth+1)
		case pcommon.ValueTypeSlice:
			sl := v.Slice()
			for i := 0; i < sl.Len(); i++ {
				if sl.At(i).Type() == pcommon.ValueTypeMap {
					b.scanBodyMap(sl.At(i).Map(), mark, depth+1)
				}
			}
		}
		return true
	})
}

func (o *offloader) newBatch() *batch { return &batch{o: o, jobs: map[jobKey]*job{}} }

func (o *offloader) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	b := o.newBatch()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				b.scanAttrs(s.Attributes(), s.Attributes(), s.TraceID())
				for e := 0; e < s.Events().Len(); e++ {
					b.scanAttrs(s.Events().At(e).Attributes(), s.Attributes(), s.TraceID())
				}
			}
		}
	}
	return td, b.run(ctx)
}

func (o *offloader) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	b := o.newBatch()
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				b.scanAttrs(lr.Attributes(), lr.Attributes(), lr.TraceID())
				body := lr.Body()
				if o.cfg.LogBody && body.Type() == pcommon.ValueTypeMap {
					// A Map body (gen_ai.*.message events): each large string value inside it moves
					// like an attribute, K -> K_ref in the map that held it.
					b.scanBodyMap(body.Map(), lr.Attributes(), 0)
					continue
				}
				if !o.cfg.LogBody || body.Type() != pcommon.ValueTypeStr || len(body.Str()) < o.cfg.MinSize {
					continue
				}
				if _, exists := lr.Attributes().Get(ref.LogBodyRefKey); exists {
					continue
				}
				b.add(lr.Attributes(), "", body.Str(), body, lr.Attributes(), true, "")
			}
		}
	}
	return ld, b.run(ctx)
}

// run stores every job (at most cfg.Concurrency at once), then either changes the data (values
// replaced by references; failed ones kept and marked) or, with on_failure: reject and any
// failure, changes nothing and returns an error.
func (b *batch) run(ctx context.Context) error {
	if len(b.order) == 0 {
		return nil
	}
	b.o.mu.Lock()
	store := b.o.store
	b.o.mu.Unlock()
	if store == nil {
		return errors.New("payload_offload: storage not started")
	}
	var done func(error)
	if b.o.breaker != nil {
		var err error
		if done, err = b.o.breaker.Allow(); err != nil {
			cause := errCircuitOpen
			if errors.Is(err, gobreaker.ErrTooManyRequests) {
				cause = errProbing
			}
			for _, j := range b.order {
				j.err = cause
			}
		}
	}
	if b.o.breaker == nil || done != nil {
		b.store(ctx, store)
		if done != nil {
			done(batchOutcome(ctx, b.order))
		}
	}

	var failed int
	var firstErr error
	for _, j := range b.order {
		if j.err != nil {
			failed += j.n
			if firstErr == nil {
				firstErr = j.err
			}
			continue
		}
		b.o.tb.ProcessorPayloadOffloadBytesStored.Add(ctx, j.res.BytesWritten)
		// Identical values within the batch are stored once: the others are dedup hits too.
		b.o.tb.ProcessorPayloadOffloadDedupHits.Add(ctx, int64(j.res.DedupHits+j.n-1))
	}
	if failed > 0 {
		b.o.tb.ProcessorPayloadOffloadFailures.Add(ctx, int64(failed))
		if b.o.cfg.OnFailure == OnFailureReject {
			b.o.logger.Warn("payload_offload: storage failed, refusing the batch so that it is retried",
				zap.Int("values", failed), zap.Error(firstErr))
			return fmt.Errorf("payload_offload: %d values could not be stored (on_failure: reject): %w", failed, firstErr)
		}
		b.o.logger.Warn("payload_offload: storage failed, values kept inline",
			zap.Int("values", failed), zap.Error(firstErr))
	}
	var offloaded, bytes int64
	for _, c := range b.cands {
		if c.job.err != nil {
			markFailed(c.mark, c.key)
			continue
		}
		if c.key == "" {
			pcommon.NewValueEmpty().CopyTo(c.body)
			c.attrs.PutStr(ref.LogBodyRefKey, c.job.res.URI)
		} else {
			c.attrs.Remove(c.key)
			c.attrs.PutStr(c.key+ref.RefSuffix, c.job.res.URI)
		}
		offloaded++
		bytes += int64(len(c.job.value))
	}
	b.o.tb.ProcessorPayloadOffloadValuesOffloaded.Add(ctx, offloaded)
	b.o.tb.ProcessorPayloadOffloadBytesOffloaded.Add(ctx, bytes)
	return nil
}

// chains groups jobs for storing: with packed, the jobs of one stream (job.stream) form one
// chain, stored one after the other, so that each value finds its predecessor's plan memo
// (writer.Batch.PutStream: a resent conversation's next value hashes and parses only its new
// messages; when they were stored at once, most did everything again). A chain is ordered by
// value length, shortest first (stable: batch order among equal lengths; see orderChain).
// Other jobs, and every job without packed (each Put waits on the bucket), are chains of one.
func chains(order []*job, packed bool) [][]*job {
	out := groupChains(order, packed)
	for _, c := range out {
		orderChain(c)
	}
	return out
}

// orderChain sorts the jobs of one stream by value length, shortest first. Instrumented agents
// end child spans before their parent and SDKs export spans in the order they end; the
// OpenTelemetry Go SDK's batch span processor, with loadgen's agents that end a turn's spans
// last to first, delivers a turn's chat calls longest history first. In batch order each value
// was then a prefix of its predecessor, never an extension: every one was planned whole (that
// was why whole plans cost about 4 times more in the collector than in a benchmark building
// spans in call order). A resent history only grows, so shortest first is call order.
// A variable so that benchmarks can measure batch order as their baseline.
var orderChain = func(c []*job) {
	if len(c) > 1 {
		slices.SortStableFunc(c, func(a, b *job) int { return cmp.Compare(len(a.value), len(b.value)) })
	}
}

// groupChains is chains before each chain is ordered: batch order.
func groupChains(order []*job, packed bool) [][]*job {
	out := make([][]*job, 0, len(order))
	var at map[string]int
	for _, j := range order {
		if packed && j.stream != "" {
			if at == nil {
				at = map[string]int{}
			}
			if i, ok := at[j.stream]; ok {
				out[i] = append(out[i], j)
				continue
			}
			at[j.stream] = len(out)
		}
		out = append(out, []*job{j})
	}
	return out
}

// batchOutcome is what a batch tells the storage circuit breaker: the first failure, nil, or
// errCallerGone when the caller's context ended (then failures say nothing about storage).
func batchOutcome(ctx context.Context, jobs []*job) error {
	k := slices.IndexFunc(jobs, func(j *job) bool { return j.err != nil })
	switch {
	case k < 0:
		return nil
	case ctx.Err() != nil:
		return errCallerGone
	default:
		return jobs[k].err
	}
}

// store stores every job (at most cfg.Concurrency at once) in one writer.Batch and commits
// it: with the pack layout the commit is the one fsync (and index transaction) of the call, so
// nothing is acknowledged before its bytes are durable. A commit that finds an object collected
// meanwhile (writer.ErrStale) stores the batch again; a commit that fails fails every job.
//
// The first value that fails after its whole retry ends the batch's wait for storage: values not
// started yet fail at once (values in flight finish their own retry), so a failing store holds a
// batch for about two values' retries (retry_on_failure::max_elapsed_time plus one attempt
// each), not for one retry per wave of cfg.Concurrency values (with 20 values and a full disk
// that was 25 s, past the client's deadline: test/faults TestDiskFull).
func (b *batch) store(ctx context.Context, store *writer.Store) {
	cs := chains(b.order, store.Packed()) // grouped and ordered once: every attempt stores the same jobs
	for attempt := 0; ; attempt++ {
		pb := store.NewBatch()
		var gaveUp atomic.Pointer[error]
		sem := make(chan struct{}, b.o.cfg.Concurrency)
		var wg sync.WaitGroup
		for _, chain := range cs {
			sem <- struct{}{}
			if e := gaveUp.Load(); e != nil {
				<-sem
				for _, j := range chain {
					j.res, j.err = writer.PutResult{}, *e
				}
				continue
			}
			wg.Add(1)
			go func(chain []*job) {
				defer func() { <-sem; wg.Done() }()
				for i, j := range chain {
					if e := gaveUp.Load(); e != nil && i > 0 {
						j.res, j.err = writer.PutResult{}, *e
						continue
					}
					start := time.Now()
					j.res, j.err = b.o.put(ctx, pb, j)
					b.o.tb.ProcessorPayloadOffloadUploadDuration.Record(ctx, time.Since(start).Seconds())
					if j.err != nil {
						e := fmt.Errorf("%w: %w", errBatchGaveUp, j.err)
						gaveUp.CompareAndSwap(nil, &e)
					}
				}
			}(chain)
		}
		wg.Wait()
		err := pb.Commit(ctx)
		if errors.Is(err, writer.ErrStale) && attempt < 2 {
			continue
		}
		if err != nil {
			for _, j := range b.order {
				if j.err == nil {
					j.err = err
				}
			}
		}
		return
	}
}

// put stores one value with the configured timeout per attempt and bounded retry.
func (o *offloader) put(ctx context.Context, store *writer.Batch, j *job) (writer.PutResult, error) {
	// Zero-copy view of the string: Put only reads it.
	data := unsafe.Slice(unsafe.StringData(j.value), len(j.value))
	attempt := func() (writer.PutResult, error) {
		actx, cancel := context.WithTimeout(ctx, o.cfg.Storage.Timeout)
		defer cancel()
		res, err := store.PutStream(actx, data, j.split, j.stream)
		if err != nil && ctx.Err() != nil {
			return res, backoff.Permanent(err)
		}
		return res, err
	}
	rc := o.cfg.RetryOnFailure
	if !rc.Enabled {
		return attempt()
	}
	eb := &backoff.ExponentialBackOff{
		InitialInterval:     rc.InitialInterval,
		RandomizationFactor: rc.RandomizationFactor,
		Multiplier:          rc.Multiplier,
		MaxInterval:         rc.MaxInterval,
	}
	eb.Reset()
	return backoff.Retry(ctx, attempt,
		backoff.WithBackOff(eb),
		backoff.WithMaxElapsedTime(rc.MaxElapsedTime),
		backoff.WithNotify(func(err error, d time.Duration) {
			o.logger.Debug("payload_offload: retrying store", zap.Error(err), zap.Duration("in", d))
		}))
}

// markFailed appends key to FailedKeysAttr on m.
func markFailed(m pcommon.Map, key string) {
	if key == "" {
		key = bodyKey
	}
	var s pcommon.Slice
	if v, ok := m.Get(FailedKeysAttr); ok && v.Type() == pcommon.ValueTypeSlice {
		s = v.Slice()
	} else {
		s = m.PutEmptySlice(FailedKeysAttr)
	}
	for i := 0; i < s.Len(); i++ {
		if s.At(i).Str() == key {
			return
		}
	}
	s.AppendEmpty().SetStr(key)
}
