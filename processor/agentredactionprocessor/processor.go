// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor // import "github.com/runagain/runagain/processor/agentredactionprocessor"

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadata"
)

type redactionProcessor struct {
	r         *redact.Redactor
	ignored   map[string]bool
	telemetry *metadata.TelemetryBuilder
	ruleAttrs map[string]metric.MeasurementOption
	logger    *zap.Logger
	keys      *seal.Keys // nil unless seal_originals.enabled
	// secretsOnly is the redactor without the PII rules: what is sealed is the original with the
	// credentials still redacted (nil unless sealing)
	secretsOnly                     *redact.Redactor
	refuse                          bool // refuse_invalid_spans
	reasonZeroTrace, reasonZeroSpan metric.MeasurementOption
	// cache hits and misses already reported to telemetry (report adds what came since)
	reportedHits, reportedMisses atomic.Int64
	memory                       *secretMemory // nil when repeated_secret_traces is 0; shared (acquireMemory)
	cfg                          *Config
}

func newRedactionProcessor(set processor.Settings, cfg *Config) (*redactionProcessor, error) {
	rc := cfg.redactConfig()
	rc.CleanCache = redact.NewCleanCache(int64(cfg.CleanCacheMiB) << 20) // nil (off) for 0
	switch {
	case cfg.HashKey != "":
		rc.HashKey = []byte(cfg.HashKey)
	case cfg.HashKeyEnv != "" && os.Getenv(cfg.HashKeyEnv) != "":
		rc.HashKey = []byte(os.Getenv(cfg.HashKeyEnv))
	case cfg.HashKeyFile != "":
		key, err := redact.LoadOrCreateKeyFile(cfg.HashKeyFile)
		if err != nil {
			return nil, fmt.Errorf("agent_redaction: hash_key_file: %w", err)
		}
		rc.HashKey = key
	default:
		set.Logger.Warn("agent_redaction: no hash key configured (hash_key, hash_key_file, or the variable named by hash_key_env); "+
			"using a random key, so hash tokens are stable only until the collector restarts",
			zap.String("hash_key_env", cfg.HashKeyEnv))
	}
	r, err := redact.New(rc)
	if err != nil {
		return nil, fmt.Errorf("agent_redaction: %w", err)
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &redactionProcessor{r: r, ignored: map[string]bool{CountAttribute: true, ChangedAttribute: true}, telemetry: tb,
		ruleAttrs: map[string]metric.MeasurementOption{}, logger: set.Logger, refuse: cfg.RefuseInvalidSpans,
		reasonZeroTrace: metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "zero_trace_id"))),
		reasonZeroSpan:  metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "zero_span_id"))),
		cfg:             cfg}
	for _, k := range cfg.IgnoredKeys {
		p.ignored[k] = true
	}
	for _, name := range r.Rules() {
		p.ruleAttrs[name] = metric.WithAttributeSet(attribute.NewSet(attribute.String("rule", name)))
	}
	set.Logger.Debug("agent_redaction rules", zap.Strings("rules", r.Rules()))
	if cfg.SealOriginals.KeyDir != "" {
		k, err := seal.OpenKeysWith(context.Background(), cfg.SealOriginals.KeyDir, cfg.SealOriginals.master())
		if err != nil {
			return nil, fmt.Errorf("agent_redaction: seal_originals: %w", err)
		}
		p.keys = k
		so := rc
		for _, name := range r.Rules() {
			if r.CategoryOf(name) == redact.CategoryPII {
				so.Disabled = append(so.Disabled, name)
			}
		}
		so.CleanCache = nil
		if p.secretsOnly, err = redact.New(so); err != nil {
			return nil, fmt.Errorf("agent_redaction: seal_originals: %w", err)
		}
		p.ignored[seal.AttrSession] = true
	}
	p.memory = acquireMemory(cfg) // last: an error above holds nothing
	return p, nil
}

func (p *redactionProcessor) shutdown(context.Context) error {
	p.telemetry.Shutdown()
	releaseMemory(p.cfg)
	if p.keys != nil {
		return p.keys.Close()
	}
	return nil
}

// tally collects what one batch did; it is reported once per batch. It never holds values.
type tally struct {
	perRule   map[string]int64
	dropped   int64
	malformed int64
	scanned   int64
	// the secrets found so far, replaced wherever else they stand (echo.go), and the trace of
	// the span or log record being examined (empty for a resource or scope)
	echo  echoes
	trace pcommon.TraceID
	// secrets found that their trace's memory had no room for (secretMemory.remember)
	unremembered int
}

func (t *tally) add(fs []redact.Finding) {
	if t.perRule == nil {
		t.perRule = map[string]int64{}
	}
	for _, f := range fs {
		t.perRule[f.Rule]++
	}
}

func (p *redactionProcessor) report(ctx context.Context, t *tally) {
	for rule, n := range t.perRule {
		p.telemetry.ProcessorAgentRedactionFindings.Add(ctx, n, p.ruleAttrs[rule])
	}
	if t.dropped > 0 {
		p.telemetry.ProcessorAgentRedactionDroppedValues.Add(ctx, t.dropped)
	}
	if t.malformed > 0 {
		p.telemetry.ProcessorAgentRedactionMalformedJSON.Add(ctx, t.malformed)
	}
	if t.scanned > 0 {
		p.telemetry.ProcessorAgentRedactionBytesScanned.Add(ctx, t.scanned)
	}
	if t.unremembered > 0 {
		p.telemetry.ProcessorAgentRedactionSecretsNotRemembered.Add(ctx, int64(t.unremembered))
	}
	// the cache counts for the whole processor: each increment is reported once, also when
	// batches are processed concurrently
	st := p.r.CleanCacheStats()
	if n := advance(&p.reportedHits, st.Hits); n > 0 {
		p.telemetry.ProcessorAgentRedactionCleanCacheHits.Add(ctx, n)
	}
	if n := advance(&p.reportedMisses, st.Misses); n > 0 {
		p.telemetry.ProcessorAgentRedactionCleanCacheMisses.Add(ctx, n)
	}
}

// advance moves *reported up to total and returns by how much (0 when another caller already
// reported as far).
func advance(reported *atomic.Int64, total int64) int64 {
	for {
		prev := reported.Load()
		if total <= prev {
			return 0
		}
		if reported.CompareAndSwap(prev, total) {
			return total - prev
		}
	}
}

// str redacts one string stored under key. It returns the new value, the number of findings and
// whether the value must be dropped.
func (p *redactionProcessor) str(key, s string, t *tally) (string, int, bool) {
	t.scanned += int64(len(s))
	out, fs, malformed := p.r.RedactValue(key, s)
	if malformed {
		t.malformed++
	}
	if len(fs) == 0 {
		return s, 0, false
	}
	t.add(fs)
	t.echo.note(p.r, t.trace, s, fs)
	if redact.HasDrop(fs) {
		t.dropped++
		return "", len(fs), true
	}
	return out, len(fs), false
}

// value redacts v in place (strings, and strings nested in slices and maps). It returns the
// number of findings and whether the whole value must be dropped.
func (p *redactionProcessor) value(key string, v pcommon.Value, t *tally) (int, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		out, n, drop := p.str(key, v.Str(), t)
		if n > 0 && !drop {
			v.SetStr(out)
		}
		return n, drop
	case pcommon.ValueTypeSlice:
		total := 0
		sl := v.Slice()
		sl.RemoveIf(func(e pcommon.Value) bool {
			n, drop := p.value(key, e, t)
			total += n
			return drop
		})
		return total, false
	case pcommon.ValueTypeMap:
		return p.attrs(v.Map(), t), false
	case pcommon.ValueTypeBytes:
		// text sent as bytes (an HTTP body) is examined like a string
		b := v.Bytes().AsRaw()
		if !utf8.Valid(b) {
			return 0, false
		}
		out, n, drop := p.str(key, string(b), t)
		if n > 0 && !drop {
			v.SetEmptyBytes().FromRaw([]byte(out))
		}
		return n, drop
	}
	return 0, false
}

// attrs redacts a map of attributes in place and returns the number of findings.
func (p *redactionProcessor) attrs(m pcommon.Map, t *tally) int {
	total, _ := p.attrsKeys(m, t, false)
	return total
}

// attrsKeys is attrs that, with keys, also returns how many values it changed per attribute key.
func (p *redactionProcessor) attrsKeys(m pcommon.Map, t *tally, keys bool) (int, map[string]int64) {
	total := 0
	var per map[string]int64
	m.RemoveIf(func(k string, v pcommon.Value) bool {
		if p.skip(k) {
			return false
		}
		n, drop := p.value(k, v, t)
		total += n
		if keys && n > 0 {
			if per == nil {
				per = map[string]int64{}
			}
			per[k] += int64(n)
		}
		return drop
	})
	return total, per
}

// name redacts a span name, event name or log event name through the same rules as values
// ("chat for jane.doe@example.com"); a name whose finding asks for the value to be dropped
// becomes "[REDACTED]". It returns the number of findings.
func (p *redactionProcessor) name(s string, set func(string), t *tally) int {
	if s == "" {
		return 0
	}
	out, n, drop := p.str("", s, t)
	if n == 0 {
		return 0
	}
	if drop {
		out = "[REDACTED]"
	}
	set(out)
	return n
}

// scope redacts the instrumentation scope's attributes (string values, nested ones too); the
// count goes to the scope's attributes like a resource's.
func (p *redactionProcessor) scope(sc pcommon.InstrumentationScope, t *tally) {
	addCount(sc.Attributes(), p.attrs(sc.Attributes(), t))
}

func addCount(m pcommon.Map, n int) {
	if n == 0 {
		return
	}
	if prev, ok := m.Get(CountAttribute); ok && prev.Type() == pcommon.ValueTypeInt {
		prev.SetInt(prev.Int() + int64(n))
		return
	}
	m.PutInt(CountAttribute, int64(n))
}

// checkIDs returns a permanent error when any span of td has an all-zero trace_id or span_id
// (OTLP: "An ID with all zeroes OR of length other than 16 bytes is considered invalid"); the
// error names both counts and the first such span, and the refused spans are counted per reason.
func (p *redactionProcessor) checkIDs(ctx context.Context, td ptrace.Traces) error {
	var zeroTrace, zeroSpan int64
	first := ""
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				zt, zs := s.TraceID().IsEmpty(), s.SpanID().IsEmpty()
				switch {
				case zt:
					zeroTrace++
				case zs:
					zeroSpan++
				default:
					continue
				}
				if first == "" {
					// position only: the name may hold what redaction would remove
					first = fmt.Sprintf("resource_spans[%d].scope_spans[%d].spans[%d]", i, j, k)
				}
			}
		}
	}
	if zeroTrace+zeroSpan == 0 {
		return nil
	}
	if zeroTrace > 0 {
		p.telemetry.ProcessorAgentRedactionRefusedSpans.Add(ctx, zeroTrace, p.reasonZeroTrace)
	}
	if zeroSpan > 0 {
		p.telemetry.ProcessorAgentRedactionRefusedSpans.Add(ctx, zeroSpan, p.reasonZeroSpan)
	}
	// a gRPC status on the error sets the otlp receiver's answer: INVALID_ARGUMENT, HTTP 400
	// (a permanent error without one becomes INTERNAL / 500)
	return consumererror.NewPermanent(status.Errorf(codes.InvalidArgument,
		"request refused, no span of it kept: %d of %d spans have an invalid id (%d with an all-zero trace_id, %d with an all-zero span_id; OTLP requires non-zero ids); first: %s",
		zeroTrace+zeroSpan, td.SpanCount(), zeroTrace, zeroSpan, first))
}

// spanWork is what the first pass over a span leaves for the passes after it.
type spanWork struct {
	span     ptrace.Span
	resource pcommon.Map
	attrN    int                      // values redacted in the span's own attributes
	n        int                      // values redacted in the span, its events and links
	per      map[string]int64         // attrN per attribute key
	before   map[string]pcommon.Value // the attributes before redaction (sealing only)
}

func (p *redactionProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	if p.refuse {
		if err := p.checkIDs(ctx, td); err != nil {
			return td, err
		}
	}
	var t tally
	work := make([]spanWork, 0, td.SpanCount())
	traces := map[pcommon.TraceID]struct{}{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		t.trace = pcommon.TraceID{}
		addCount(rs.Resource().Attributes(), p.attrs(rs.Resource().Attributes(), &t))
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			t.trace = pcommon.TraceID{}
			p.scope(sss.At(j).Scope(), &t)
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				t.trace = span.TraceID()
				traces[t.trace] = struct{}{}
				w := spanWork{span: span, resource: rs.Resource().Attributes()}
				w.n = p.name(span.Name(), span.SetName, &t)
				if p.keys != nil {
					w.before = seal.Snapshot(span.Attributes())
				}
				w.attrN, w.per = p.attrsKeys(span.Attributes(), &t, true)
				w.n += w.attrN
				evs := span.Events()
				for e := 0; e < evs.Len(); e++ {
					ev := evs.At(e)
					w.n += p.name(ev.Name(), ev.SetName, &t)
					w.n += p.attrs(ev.Attributes(), &t)
				}
				links := span.Links()
				for l := 0; l < links.Len(); l++ {
					w.n += p.attrs(links.At(l).Attributes(), &t)
				}
				if msg := span.Status().Message(); msg != "" {
					out, sn, drop := p.str("", msg, &t)
					if drop {
						out = ""
					}
					if sn > 0 {
						span.Status().SetMessage(out)
						w.n += sn
					}
				}
				work = append(work, w)
			}
		}
	}
	// the secrets found anywhere in the request (and earlier in its traces), wherever else they stand
	p.memory.recall(&t.echo, traces)
	if t.echo.prepare() {
		p.echoTraces(td, work, &t)
	}
	t.unremembered = p.memory.remember(&t.echo)
	for i := range work {
		w := &work[i]
		span := w.span
		if len(w.per) > 0 {
			// which attributes changed and how many values in each: replay tells the
			// responses that differ from what the agent saw
			cm := span.Attributes().PutEmptyMap(ChangedAttribute)
			cm.EnsureCapacity(len(w.per))
			for k, c := range w.per {
				cm.PutInt(k, c)
			}
		}
		if p.keys != nil && w.attrN > 0 {
			p.withoutCredentials(span.Attributes(), w.before, &t.echo)
			if _, err := seal.SealChanged(ctx, p.keys, span, w.resource, w.before); err != nil {
				// never store the value in clear: the redacted span goes on, the original is lost
				p.logger.Error("agent_redaction: sealing an original failed; the redacted value is kept without it", zap.Error(err))
			}
		}
		addCount(span.Attributes(), w.n)
	}
	p.report(ctx, &t)
	return td, nil
}

// echoTraces is the second pass over a request: every secret of t.echo is replaced wherever it
// still stands, and counted with the span (or resource or scope) it was in.
func (p *redactionProcessor) echoTraces(td ptrace.Traces, work []spanWork, t *tally) {
	e := &t.echo
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		n, _ := e.attrs(rs.Resource().Attributes(), p.skip, t, false)
		addCount(rs.Resource().Attributes(), n)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sa := sss.At(j).Scope().Attributes()
			n, _ := e.attrs(sa, p.skip, t, false)
			addCount(sa, n)
		}
	}
	for i := range work {
		w := &work[i]
		span := w.span
		n := e.name(span.Name(), span.SetName, t)
		an, per := e.attrs(span.Attributes(), p.skip, t, true)
		w.attrN += an
		for k, c := range per {
			if w.per == nil {
				w.per = map[string]int64{}
			}
			w.per[k] += c
		}
		n += an
		evs := span.Events()
		for k := 0; k < evs.Len(); k++ {
			ev := evs.At(k)
			n += e.name(ev.Name(), ev.SetName, t)
			en, _ := e.attrs(ev.Attributes(), p.skip, t, false)
			n += en
		}
		links := span.Links()
		for k := 0; k < links.Len(); k++ {
			ln, _ := e.attrs(links.At(k).Attributes(), p.skip, t, false)
			n += ln
		}
		if msg := span.Status().Message(); msg != "" {
			n += e.name(msg, span.Status().SetMessage, t)
		}
		w.n += n
	}
}

// skip reports whether the values under attribute key k are left as they are.
func (p *redactionProcessor) skip(k string) bool {
	return p.ignored[k] || (p.keys != nil && strings.HasPrefix(k, seal.AttrPrefix))
}

func (p *redactionProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	var t tally
	counts := make([]int, 0, ld.LogRecordCount()) // values redacted per record, in order
	traces := map[pcommon.TraceID]struct{}{}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		t.trace = pcommon.TraceID{}
		addCount(rl.Resource().Attributes(), p.attrs(rl.Resource().Attributes(), &t))
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			t.trace = pcommon.TraceID{}
			p.scope(sls.At(j).Scope(), &t)
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				t.trace = lr.TraceID()
				if !t.trace.IsEmpty() {
					traces[t.trace] = struct{}{}
				}
				n := p.attrs(lr.Attributes(), &t)
				n += p.name(lr.EventName(), lr.SetEventName, &t)
				bn, drop := p.value("", lr.Body(), &t)
				if drop {
					pcommon.NewValueEmpty().CopyTo(lr.Body())
				}
				counts = append(counts, n+bn)
			}
		}
	}
	p.memory.recall(&t.echo, traces)
	echo := t.echo.prepare()
	t.unremembered = p.memory.remember(&t.echo)
	r := 0
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		if echo {
			n, _ := t.echo.attrs(rl.Resource().Attributes(), p.skip, &t, false)
			addCount(rl.Resource().Attributes(), n)
		}
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			if echo {
				sa := sls.At(j).Scope().Attributes()
				n, _ := t.echo.attrs(sa, p.skip, &t, false)
				addCount(sa, n)
			}
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				n := counts[r]
				r++
				if echo {
					an, _ := t.echo.attrs(lr.Attributes(), p.skip, &t, false)
					n += an + t.echo.name(lr.EventName(), lr.SetEventName, &t) + t.echo.value(lr.Body(), p.skip, &t)
				}
				addCount(lr.Attributes(), n)
			}
		}
	}
	p.report(ctx, &t)
	return ld, nil
}

// withoutCredentials turns the originals in before (attribute values before redaction) into
// what may be sealed: each changed value with the findings of the secret rules redacted again
// and the request's secrets (echoes) replaced where they repeat (a credential is never sealed:
// replay does not need it), and no entry at all for a value whose every change was a credential
// (an Authorization or Cookie header, an API key), which then keeps only its redacted form.
func (p *redactionProcessor) withoutCredentials(attrs pcommon.Map, before map[string]pcommon.Value, echoes *echoes) {
	for key, orig := range before {
		cur, ok := attrs.Get(key)
		if ok && cur.Equal(orig) {
			continue
		}
		v := pcommon.NewValueEmpty()
		orig.CopyTo(v)
		drop := redactIn(p.secretsOnly, key, v)
		if !drop && len(echoes.vals) > 0 {
			var discard tally // counted once, in the request's tally
			echoes.value(v, p.skip, &discard)
		}
		if drop || (ok && v.Equal(cur)) {
			delete(before, key) // nothing but credentials changed: nothing to seal
			continue
		}
		before[key] = v
	}
}

// redactIn redacts v in place with r as the processor does (strings, bytes holding text, and
// strings nested in slices and maps); it reports whether the whole value is to be dropped.
func redactIn(r *redact.Redactor, key string, v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		out, fs, _ := r.RedactValue(key, v.Str())
		if redact.HasDrop(fs) {
			return true
		}
		if len(fs) > 0 {
			v.SetStr(out)
		}
	case pcommon.ValueTypeBytes:
		b := v.Bytes().AsRaw()
		if !utf8.Valid(b) {
			return false
		}
		out, fs, _ := r.RedactValue(key, string(b))
		if redact.HasDrop(fs) {
			return true
		}
		if len(fs) > 0 {
			v.SetEmptyBytes().FromRaw([]byte(out))
		}
	case pcommon.ValueTypeSlice:
		v.Slice().RemoveIf(func(e pcommon.Value) bool { return redactIn(r, key, e) })
	case pcommon.ValueTypeMap:
		v.Map().RemoveIf(func(k string, e pcommon.Value) bool { return redactIn(r, k, e) })
	}
	return false
}
