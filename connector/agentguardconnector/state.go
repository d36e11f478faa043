package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
)

// Alert kinds (attribute alert.kind).
const (
	KindLoop            = "loop"
	KindCostSpike       = "cost_spike"
	KindToolErrorSpike  = "tool_error_spike"
	KindContextPressure = "context_pressure"
)

// Loop rules (attribute runagain.alert.rule on loop alerts).
const (
	RuleRepeatedToolCall   = "repeated_tool_call"
	RuleRepeatedLLMRequest = "repeated_llm_request"
	RuleConsecutiveTool    = "consecutive_tool"
)

// session is the per-session detection state.
type session struct {
	id, agent, service string
	cost               float64
	priced             int
	costAlerted        bool
	lastSeen           time.Time

	// Fingerprints seen once are kept inline (most calls of a healthy session); those seen
	// twice or more in the window get an occurrences record.
	seen []fpSeen
	reps map[uint64]*occurrences
	// loopAlerted holds the subjects (a tool, or an LLM model) that already raised a loop
	// alert in this session: one loop alert per subject per session.
	loopAlerted map[subject]bool

	lastTool string
	run      int
	runSpans []spanRef
}

type spanRef struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// firstDelivery records ref as counted and reports whether it was not counted before (within
// the last cfg.MaxSeenSpans spans).
func (st *state) firstDelivery(ref spanRef) bool {
	if st.seen.Contains(ref) {
		return false
	}
	st.seen.Add(ref, struct{}{})
	return true
}

// subject is what a loop is about: kind 't' (tool name) or 'l' (LLM request model).
type subject struct {
	kind byte
	name string
}

type fpSeen struct {
	fp  uint64
	ts  int64
	ref spanRef
}

// occurrences are the recent end times (ns) and spans of one call fingerprint, at most N.
type occurrences struct {
	times []int64
	spans []spanRef
}

// baseline holds the costs of ended sessions of one (agent, service) group in two DDSketch
// generations; the median is read from their merge.
type baseline struct {
	cur, prev *ddsketch.DDSketch
	curN      int
	med       float64
	dirty     bool
}

// rateWindow counts calls and hits (errors, truncated responses) in nBuckets time buckets
// covering one window; buckets leaving the window fold into an exponentially decayed baseline.
type rateWindow struct {
	width     int64
	buckets   [nBuckets]bucket
	newest    int64
	baseTotal float64
	baseHits  float64
	halfLife  int64 // ns
	lastFold  int64 // bucket index of the last folded bucket
	lastAlert int64
	recent    []hitRef
}

type bucket struct {
	idx         int64
	total, hits int
}

type hitRef struct {
	spanRef
	session string
	ts      int64
}

const (
	nBuckets    = 10
	maxRecent   = 10
	maxRunSpans = 64
)

type state struct {
	cfg *Config
	// simplelru (no internal locking): the guard's mutex guards all state.
	sessions *simplelru.LRU[string, *session]
	groups   *simplelru.LRU[string, *baseline]
	tools    *simplelru.LRU[string, *rateWindow]
	models   *simplelru.LRU[string, *rateWindow]
	seen     *simplelru.LRU[spanRef, struct{}] // spans counted, so a redelivered span counts once
	agg      *aggregator
	reasons  map[string]bool
	onEnd    func(*session, bool)
	expiring bool
	scratch  []byte // canonical JSON buffer, reused
}

func newState(cfg *Config, onEnd func(*session, bool)) (*state, error) {
	st := &state{cfg: cfg, onEnd: onEnd, agg: newAggregator(cfg.MaxSeries, cfg.Exemplars.MaxPerDataPoint), reasons: map[string]bool{}}
	var err error
	if st.sessions, err = simplelru.NewLRU(cfg.MaxSessions, st.endSession); err != nil {
		return nil, fmt.Errorf("max_sessions: %w", err)
	}
	if st.groups, err = simplelru.NewLRU[string, *baseline](max(cfg.CostSpike.MaxGroups, 1), nil); err != nil {
		return nil, fmt.Errorf("cost_spike.max_groups: %w", err)
	}
	if st.tools, err = simplelru.NewLRU[string, *rateWindow](max(cfg.ToolErrors.MaxTools, 1), nil); err != nil {
		return nil, fmt.Errorf("tool_errors.max_tools: %w", err)
	}
	if st.models, err = simplelru.NewLRU[string, *rateWindow](max(cfg.ContextPressure.MaxModels, 1), nil); err != nil {
		return nil, fmt.Errorf("context_pressure.max_models: %w", err)
	}
	if st.seen, err = simplelru.NewLRU[spanRef, struct{}](max(cfg.MaxSeenSpans, 1), nil); err != nil {
		return nil, fmt.Errorf("max_seen_spans: %w", err)
	}
	for _, r := range cfg.ContextPressure.FinishReasons {
		st.reasons[r] = true
	}
	return st, nil
}

// endSession runs when a session leaves the LRU (idle expiry or eviction): its cost joins the
// baseline of its group.
func (st *state) endSession(_ string, s *session) {
	if st.cfg.CostSpike.Enabled && s.priced > 0 {
		key := s.agent + "\x00" + s.service
		b, ok := st.groups.Get(key)
		if !ok {
			b = &baseline{}
			st.groups.Add(key, b)
		}
		b.add(s.cost, st.cfg.CostSpike)
	}
	if st.onEnd != nil {
		st.onEnd(s, !st.expiring)
	}
}

// expire ends sessions last seen before cutoff and returns how many.
func (st *state) expire(cutoff time.Time) int {
	st.expiring = true
	defer func() { st.expiring = false }()
	n := 0
	for {
		_, s, ok := st.sessions.GetOldest()
		if !ok || !s.lastSeen.Before(cutoff) {
			return n
		}
		st.sessions.RemoveOldest()
		n++
	}
}

func (b *baseline) add(v float64, cfg CostSpikeConfig) {
	if b.cur == nil {
		b.cur, _ = ddsketch.NewDefaultDDSketch(cfg.RelativeAccuracy)
	}
	_ = b.cur.Add(v)
	b.curN++
	b.dirty = true
	if b.curN >= cfg.BaselineSessions {
		b.prev, b.curN = b.cur, 0
		b.cur, _ = ddsketch.NewDefaultDDSketch(cfg.RelativeAccuracy)
	}
}

func (b *baseline) count() float64 {
	n := 0.0
	if b.cur != nil {
		n += b.cur.GetCount()
	}
	if b.prev != nil {
		n += b.prev.GetCount()
	}
	return n
}

func (b *baseline) median() float64 {
	if b.dirty {
		m := b.cur.Copy()
		if b.prev != nil {
			_ = m.MergeWith(b.prev)
		}
		b.med, _ = m.GetValueAtQuantile(0.5)
		b.dirty = false
	}
	return b.med
}

func newRateWindow(window, halfLife time.Duration) *rateWindow {
	w := int64(window) / nBuckets
	if w <= 0 {
		w = 1
	}
	rw := &rateWindow{width: w, halfLife: max(int64(halfLife), 1), lastFold: -1}
	for i := range rw.buckets {
		rw.buckets[i].idx = -1
	}
	return rw
}

func (w *rateWindow) fold(b *bucket) {
	if b.total > 0 {
		// Exponential decay by the time elapsed since the last fold (half-life halfLife).
		decay := 1.0
		if w.lastFold >= 0 && b.idx > w.lastFold {
			decay = math.Exp2(-float64((b.idx-w.lastFold)*w.width) / float64(w.halfLife))
		}
		w.baseTotal = w.baseTotal*decay + float64(b.total)
		w.baseHits = w.baseHits*decay + float64(b.hits)
		if b.idx > w.lastFold {
			w.lastFold = b.idx
		}
	}
	*b = bucket{idx: -1}
}

// add counts one call at ts (ns) and returns the window totals after it.
func (w *rateWindow) add(ts int64, hit bool) (total, hits int) {
	idx := ts / w.width
	if idx > w.newest {
		w.newest = idx
	}
	for i := range w.buckets {
		if b := &w.buckets[i]; b.idx >= 0 && b.idx <= w.newest-nBuckets {
			w.fold(b)
		}
	}
	if idx <= w.newest-nBuckets {
		// Older than the window: baseline only.
		w.baseTotal++
		if hit {
			w.baseHits++
		}
	} else {
		b := &w.buckets[idx%nBuckets]
		if b.idx != idx {
			w.fold(b)
			b.idx = idx
		}
		b.total++
		if hit {
			b.hits++
		}
	}
	for _, b := range w.buckets {
		if b.idx >= 0 {
			total += b.total
			hits += b.hits
		}
	}
	return total, hits
}

func (w *rateWindow) baseRate(minCalls int) float64 {
	if w.baseTotal < float64(minCalls) {
		return 0
	}
	return w.baseHits / w.baseTotal
}

// inWindow returns the remembered hits that ended at or after since.
func (w *rateWindow) inWindow(since int64) []hitRef {
	var out []hitRef
	for _, h := range w.recent {
		if h.ts >= since {
			out = append(out, h)
		}
	}
	return out
}

func (w *rateWindow) remember(r hitRef) {
	if len(w.recent) >= maxRecent {
		copy(w.recent, w.recent[1:])
		w.recent = w.recent[:maxRecent-1]
	}
	w.recent = append(w.recent, r)
}

// session returns the state of e's session, creating it.
func (st *state) session(e *event, now time.Time) *session {
	s, ok := st.sessions.Get(e.session)
	if !ok {
		s = &session{id: e.session, service: e.service}
		st.sessions.Add(e.session, s)
	}
	if s.agent == "" {
		s.agent = e.agent
	}
	if s.service == "" {
		s.service = e.service
	}
	s.lastSeen = now
	return s
}

// process analyses one span. It returns false for an LLM span with usage but no known price.
func (st *state) process(e *event, prices *pricing.Prices, b *batch) bool {
	sp := e.span
	attrs := sp.Attributes()
	s := st.session(e, b.now)
	agent := e.agent
	if agent == "" {
		agent = s.agent
	}
	end := sp.EndTimestamp()
	if end < sp.StartTimestamp() {
		end = sp.StartTimestamp()
	}
	ref := spanRef{sp.TraceID(), sp.SpanID()}
	ex := exemplar{trace: ref.trace, span: ref.span, ts: end}
	op := ""
	if v, ok := attrs.Get(genai.AttrOperationName); ok {
		op = v.AsString()
	}
	errType := ""
	if v, ok := attrs.Get(genai.AttrErrorType); ok {
		errType = v.AsString()
	} else if sp.Status().Code() == ptrace.StatusCodeError {
		errType = "_OTHER"
	}
	dur := float64(end-sp.StartTimestamp()) / 1e9
	b.cur = end
	priced := true

	switch e.kind {
	case genai.KindLLM:
		provider := genai.Provider(attrs)
		reqModel := genai.RequestModel(attrs)
		respModel := ""
		if v, ok := attrs.Get(genai.AttrResponseModel); ok {
			respModel = v.AsString()
		}
		if op == "" {
			op = "chat"
		}
		base := [6]kv{{genai.AttrAgentName, agent}, {genai.AttrOperationName, op}, {genai.AttrProviderName, provider}, {genai.AttrRequestModel, reqModel}, {genai.AttrResponseModel, respModel}, {genai.AttrErrorType, errType}}
		st.agg.record(st.agg.get(mDuration, e.service, base[:], b.ts), dur, ex)
		u := genai.TokenUsage(attrs)
		if u.Input > 0 {
			base[5] = kv{"gen_ai.token.type", "input"}
			st.agg.record(st.agg.get(mTokenUsage, e.service, base[:], b.ts), float64(u.Input), ex)
		}
		if u.Output > 0 {
			base[5] = kv{"gen_ai.token.type", "output"}
			st.agg.record(st.agg.get(mTokenUsage, e.service, base[:], b.ts), float64(u.Output), ex)
		}
		if u.Input > 0 || u.Output > 0 || u.CacheRead > 0 || u.CacheWrite > 0 {
			costAttrs := [3]kv{{genai.AttrAgentName, agent}, {genai.AttrProviderName, provider}, {genai.AttrRequestModel, reqModel}}
			if cost := prices.SpanCost(attrs, sp.StartTimestamp()); !cost.Unpriced {
				c := cost.USD
				st.agg.record(st.agg.get(mCost, e.service, costAttrs[:], b.ts), c, ex)
				s.cost += c
				s.priced++
				st.checkCost(s, ref, b)
			} else {
				st.agg.record(st.agg.get(mUnpriced, e.service, costAttrs[:], b.ts), 1, ex)
				priced = false
			}
		}
		if cfg := st.cfg.ContextPressure; cfg.Enabled {
			if reasons := genai.FinishReasons(attrs); len(reasons) > 0 {
				model := genai.Model(attrs)
				hit := false
				for _, r := range reasons {
					hit = hit || st.reasons[r]
				}
				st.checkContext(model, hit, int64(end), hitRef{ref, s.id, int64(end)}, s, agent, e.service, b)
			}
		}
		if st.cfg.Loop.Enabled {
			if req := genai.LLMRequest(attrs); req.Recorded() {
				fp := fingerprint("llm", reqModel, genai.SystemInstructions(attrs).Identity(), req.Identity())
				st.checkRepeat(s, fp, subject{'l', reqModel}, RuleRepeatedLLMRequest, kv{genai.AttrRequestModel, reqModel}, int64(end), ref, agent, b)
			}
		}

	case genai.KindTool:
		name := genai.ToolName(attrs)
		if op == "" {
			op = "execute_tool"
		}
		toolAttrs := [4]kv{{genai.AttrAgentName, agent}, {genai.AttrOperationName, op}, {genai.AttrToolName, name}, {genai.AttrErrorType, errType}}
		st.agg.record(st.agg.get(mDuration, e.service, toolAttrs[:], b.ts), dur, ex)
		if st.cfg.ToolErrors.Enabled {
			st.checkToolErrors(name, errType != "", int64(end), hitRef{ref, s.id, int64(end)}, s, agent, e.service, b)
		}
		if st.cfg.Loop.Enabled {
			if args := genai.ToolArguments(attrs); args.Recorded() {
				fp := st.argsFingerprint(name, args)
				st.checkRepeat(s, fp, subject{'t', name}, RuleRepeatedToolCall, kv{genai.AttrToolName, name}, int64(end), ref, agent, b)
			}
			st.checkConsecutive(s, name, ref, agent, b)
		}
	}
	return priced
}

func fingerprint(parts ...string) uint64 {
	var d xxhash.Digest
	d.Reset()
	sep := [1]byte{0}
	for _, p := range parts {
		_, _ = d.WriteString(p)
		_, _ = d.Write(sep[:])
	}
	return d.Sum64()
}

// argsFingerprint hashes a tool call: the tool name and the identity of its arguments, which is
// the content hash of an offloaded value, or the inline JSON in canonical form (members sorted,
// no insignificant whitespace, so key order and spacing do not matter), or the inline text.
func (st *state) argsFingerprint(tool string, p genai.Payload) uint64 {
	var d xxhash.Digest
	d.Reset()
	sep := [1]byte{0}
	_, _ = d.WriteString("tool")
	_, _ = d.Write(sep[:])
	_, _ = d.WriteString(tool)
	_, _ = d.Write(sep[:])
	switch {
	case p.Ref != "" || p.Value == "":
		_, _ = d.WriteString(p.Identity())
	case p.Value[0] == '{' || p.Value[0] == '[':
		if b, ok := canonicalJSON(st.scratch[:0], p.Value); ok {
			_, _ = d.Write(b)
			st.scratch = b[:0]
		} else {
			_, _ = d.WriteString(p.Value)
		}
	default:
		_, _ = d.WriteString(p.Value)
	}
	_, _ = d.Write(sep[:])
	return d.Sum64()
}

func (st *state) checkRepeat(s *session, fp uint64, subj0 subject, rule string, subj kv, ts int64, ref spanRef, agent string, b *batch) {
	cfg := st.cfg.Loop
	win := int64(cfg.Window)
	o, ok := s.reps[fp]
	if !ok {
		k := slices.IndexFunc(s.seen, func(e fpSeen) bool { return e.fp == fp })
		if k >= 0 && s.seen[k].ts < ts-win {
			s.seen[k] = fpSeen{fp, ts, ref} // the earlier call left the window
			return
		}
		if k < 0 {
			if len(s.seen)+len(s.reps) >= cfg.MaxFingerprints {
				s.pruneFingerprints(ts - win)
				if len(s.seen)+len(s.reps) >= cfg.MaxFingerprints {
					return
				}
			}
			s.seen = append(s.seen, fpSeen{fp, ts, ref})
			if cfg.Repeats > 1 {
				return
			}
			k = len(s.seen) - 1
		}
		// Second occurrence within the window: promote to a record.
		first := s.seen[k]
		s.seen[k] = s.seen[len(s.seen)-1]
		s.seen = s.seen[:len(s.seen)-1]
		o = &occurrences{times: []int64{first.ts}, spans: []spanRef{first.ref}}
		if first.ts == ts && first.ref == ref {
			o.times, o.spans = o.times[:0], o.spans[:0]
		}
		if s.reps == nil {
			s.reps = map[uint64]*occurrences{}
		}
		s.reps[fp] = o
	}
	o.times = append(o.times, ts)
	o.spans = append(o.spans, ref)
	drop := 0
	for drop < len(o.times) && o.times[drop] < ts-win {
		drop++
	}
	if extra := len(o.times) - drop - cfg.Repeats; extra > 0 {
		drop += extra
	}
	if drop > 0 {
		o.times = append(o.times[:0], o.times[drop:]...)
		o.spans = append(o.spans[:0], o.spans[drop:]...)
	}
	if len(o.times) >= cfg.Repeats && !s.loopAlerted[subj0] {
		st.markLoop(s, subj0)
		kindWord := "tool " + subj.v + " called"
		if rule == RuleRepeatedLLMRequest {
			kindWord = "the same request sent to model " + subj.v
		}
		b.raise(&alert{
			kind: KindLoop, rule: rule, service: s.service, agent: agent, session: s.id, at: ref,
			subject: subj, spans: append([]spanRef(nil), o.spans...),
			evidence: []evidence{
				{"runagain.alert.count", int64(len(o.times))},
				{"runagain.alert.threshold", int64(cfg.Repeats)},
				{"runagain.alert.window_s", cfg.Window.Seconds()},
				{"runagain.alert.first_ts", time.Unix(0, o.times[0]).UTC().Format(time.RFC3339Nano)},
			},
			message: fmt.Sprintf("loop: %s %d times with identical input within %s in session %s", kindWord, len(o.times), cfg.Window, s.id),
		})
	}
}

// pruneFingerprints forgets fingerprints whose last call ended before cutoff.
func (s *session) pruneFingerprints(cutoff int64) {
	s.seen = slices.DeleteFunc(s.seen, func(e fpSeen) bool { return e.ts < cutoff })
	for k, v := range s.reps {
		if v.times[len(v.times)-1] < cutoff {
			delete(s.reps, k)
		}
	}
}

func (st *state) markLoop(s *session, subj subject) {
	if s.loopAlerted == nil {
		s.loopAlerted = map[subject]bool{}
	}
	s.loopAlerted[subj] = true
}

func (st *state) checkConsecutive(s *session, name string, ref spanRef, agent string, b *batch) {
	m := st.cfg.Loop.ConsecutiveTool
	if m == 0 {
		return
	}
	if s.lastTool == name {
		s.run++
	} else {
		s.lastTool, s.run, s.runSpans = name, 1, s.runSpans[:0]
	}
	if len(s.runSpans) < maxRunSpans {
		s.runSpans = append(s.runSpans, ref)
	}
	subj := subject{'t', name}
	if s.run >= m && !s.loopAlerted[subj] {
		st.markLoop(s, subj)
		b.raise(&alert{
			kind: KindLoop, rule: RuleConsecutiveTool, service: s.service, agent: agent, session: s.id, at: ref,
			subject: kv{genai.AttrToolName, name}, spans: append([]spanRef(nil), s.runSpans...),
			evidence: []evidence{
				{"runagain.alert.count", int64(s.run)},
				{"runagain.alert.threshold", int64(m)},
			},
			message: fmt.Sprintf("loop: tool %s called %d times in a row in session %s", name, s.run, s.id),
		})
	}
}

func (st *state) checkCost(s *session, ref spanRef, b *batch) {
	cfg := st.cfg.CostSpike
	if !cfg.Enabled || s.costAlerted || s.cost < cfg.MinCost {
		return
	}
	bl, ok := st.groups.Get(s.agent + "\x00" + s.service)
	if !ok || bl.count() < float64(cfg.MinSessions) {
		return
	}
	med := bl.median()
	if med <= 0 || s.cost <= cfg.Factor*med {
		return
	}
	s.costAlerted = true
	b.raise(&alert{
		kind: KindCostSpike, service: s.service, agent: s.agent, session: s.id, at: ref,
		spans: []spanRef{ref},
		evidence: []evidence{
			{"runagain.alert.session_cost", s.cost},
			{"runagain.alert.median_cost", med},
			{"runagain.alert.factor", cfg.Factor},
			{"runagain.alert.baseline_sessions", int64(bl.count())},
			{"runagain.alert.priced_calls", int64(s.priced)},
		},
		message: fmt.Sprintf("cost spike: session %s has cost %.4f USD, more than %g x the median %.4f USD of %d ended sessions of agent %q in service %q",
			s.id, s.cost, cfg.Factor, med, int64(bl.count()), s.agent, s.service),
	})
}

func (st *state) checkToolErrors(name string, isErr bool, ts int64, hr hitRef, s *session, agent, service string, b *batch) {
	cfg := st.cfg.ToolErrors
	key := service + "\x00" + name
	w, ok := st.tools.Get(key)
	if !ok {
		w = newRateWindow(cfg.Window, cfg.BaselineHalfLife)
		st.tools.Add(key, w)
	}
	base := w.baseRate(cfg.MinCalls)
	total, hits := w.add(ts, isErr)
	if !isErr {
		return
	}
	w.remember(hr)
	rate := float64(hits) / float64(total)
	if total < cfg.MinCalls || rate < cfg.Threshold || rate < cfg.BaselineFactor*base {
		return
	}
	if w.lastAlert != 0 && ts-w.lastAlert < int64(cfg.Window) {
		return
	}
	w.lastAlert = ts
	b.raise(&alert{
		kind: KindToolErrorSpike, service: service, agent: agent, session: s.id, at: hr.spanRef,
		subject: kv{genai.AttrToolName, name}, hits: w.inWindow(ts - int64(cfg.Window)),
		evidence: []evidence{
			{"runagain.alert.calls", int64(total)},
			{"runagain.alert.errors", int64(hits)},
			{"runagain.alert.error_rate", rate},
			{"runagain.alert.baseline_error_rate", base},
			{"runagain.alert.threshold", cfg.Threshold},
			{"runagain.alert.window_s", cfg.Window.Seconds()},
		},
		message: fmt.Sprintf("tool error spike: tool %s failed %d of %d calls (%.0f%%) within %s; its baseline error rate is %.0f%%",
			name, hits, total, rate*100, cfg.Window, base*100),
	})
}

func (st *state) checkContext(model string, hit bool, ts int64, hr hitRef, s *session, agent, service string, b *batch) {
	cfg := st.cfg.ContextPressure
	w, ok := st.models.Get(model)
	if !ok {
		w = newRateWindow(cfg.Window, cfg.Window)
		st.models.Add(model, w)
	}
	total, hits := w.add(ts, hit)
	if !hit {
		return
	}
	w.remember(hr)
	share := float64(hits) / float64(total)
	if total < cfg.MinResponses || share <= cfg.Threshold {
		return
	}
	if w.lastAlert != 0 && ts-w.lastAlert < int64(cfg.Window) {
		return
	}
	w.lastAlert = ts
	b.raise(&alert{
		kind: KindContextPressure, service: service, agent: agent, session: s.id, at: hr.spanRef,
		subject: kv{genai.AttrRequestModel, model}, hits: w.inWindow(ts - int64(cfg.Window)),
		evidence: []evidence{
			{"runagain.alert.responses", int64(total)},
			{"runagain.alert.truncated", int64(hits)},
			{"runagain.alert.share", share},
			{"runagain.alert.threshold", cfg.Threshold},
			{"runagain.alert.window_s", cfg.Window.Seconds()},
		},
		message: fmt.Sprintf("context pressure: %d of %d responses of model %s (%.0f%%) within %s stopped at the token limit",
			hits, total, model, share*100, cfg.Window),
	})
}
