// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// Event names of the records that point at a run and are pinned on its timeline.
const (
	eventAlert      = runagainattr.EventAlert      // agent_guard
	eventDivergence = runagainattr.EventDivergence // internal/proxy
)

// Kinds shown on the timeline (colours in ui.css).
const (
	kindAgent = "agent"
	kindLLM   = "llm"
	kindTool  = "tool"
	kindHTTP  = "http" // a recorded HTTP exchange (fixture)
	kindMCP   = "mcp"  // a recorded MCP exchange over stdio (runagain mcp)
	kindOther = "other"
)

// spanKind is the timeline kind of a node: a recorded HTTP exchange (fixture) or HTTP client
// span, else its kind as the read model classified it.
func spanKind(n *runview.Node) string {
	s := n.Span
	if fixture.IsMCPExchange(s) {
		return kindMCP
	}
	if _, ok := s.Attributes().Get(runagainattr.FixtureSource); ok {
		return kindHTTP
	}
	switch n.Kind {
	case genai.KindLLM:
		return kindLLM
	case genai.KindTool:
		return kindTool
	case genai.KindAgent:
		return kindAgent
	}
	if _, ok := s.Attributes().Get("http.request.method"); ok && s.Kind() == ptrace.SpanKindClient {
		return kindHTTP
	}
	return kindOther
}

// Row is one span on the timeline, as sent to the browser (/api/runs/{trace}/rows).
// Times are milliseconds from the run's start.
type Row struct {
	I      int     `json:"i"` // position in run order
	SpanID string  `json:"id"`
	Parent int     `json:"p"` // index of the parent row, -1 for a root
	Depth  int     `json:"d"`
	Name   string  `json:"n"`
	Kind   string  `json:"k"`
	Start  float64 `json:"s"`
	Dur    float64 `json:"t"`
	Error  bool    `json:"e,omitempty"`
	Step   int     `json:"st,omitempty"` // 1-based LLM step, 0 when not an LLM call
	Model  string  `json:"m,omitempty"`
	Marks  []int   `json:"mk,omitempty"` // indexes into the run's marks pinned on this span
	// Children is the number of direct children (the waterfall folds a row with children).
	Children int `json:"c,omitempty"`
	// Unfinished: the span has not ended (Dur runs to the run's end); MissingParent names the
	// parent span that never arrived, on the first of its orphans (incomplete.go).
	Unfinished    bool   `json:"u,omitempty"`
	MissingParent string `json:"mp,omitempty"`
}

// Mark is a record pointing at the run, pinned on the timeline: an agent_guard alert or a replay
// divergence (or any other log record naming a span of the run).
type Mark struct {
	I       int               `json:"i"`
	Kind    string            `json:"k"` // "alert", "divergence" or "record"
	Name    string            `json:"n"`
	Message string            `json:"msg"`
	SpanID  string            `json:"span,omitempty"`
	Row     int               `json:"row"` // row index of SpanID, -1 when not in the run
	At      float64           `json:"at"`  // ms from the run's start
	Time    time.Time         `json:"time"`
	Attrs   map[string]string `json:"-"`
	pin     int               // row it is pinned on when Row is -1 (the root for a run-level alert), -1 none
}

// cachedRun is a run read from the store and arranged for the pages. Spans are rehydrated one at
// a time when a panel first shows them (payloads load on demand).
type cachedRun struct {
	read    time.Time
	run     *store.Run
	view    *runview.View // the read model: every count and cost on the pages comes from it
	nodes   []*runview.Node
	rows    []Row
	byID    map[string]int
	steps   []int // row index of each LLM step
	marks   []Mark
	logsBy  map[string][]plog.LogRecord // by span id
	start   time.Time
	end     time.Time
	session string
	detail  runDetail

	unfinished int // spans that have not ended

	mu         sync.Mutex
	rehydrated map[int]bool
}

// runDetail aggregates one run for the sessions list beyond what store.RunSummary carries.
type runDetail struct {
	Spans       int64
	LLMCalls    int
	ToolCalls   int
	Agents      []string
	Alerts      int
	Divergences int
	CostUSD     float64
	Unpriced    int
	// Test names the dataset case this run is a test run of (`runagain test` sets
	// runagain.test.dataset, .dataset.version and .case on its root span); empty otherwise.
	TestDataset, TestVersion, TestCase string
	// Preview names the run and says how it began and ended (listrow.go).
	Preview runPreview
	// DurationMS is the run page's duration (the read model's start to end), so that the list
	// and the page say the same.
	DurationMS float64
}

// Attributes `runagain test` puts on the root span of a test run.
const (
	attrTestDataset = runagainattr.TestDataset
	attrTestVersion = runagainattr.TestVersion
	attrTestCase    = runagainattr.TestCase
)

// errNotFound marks a missing run, step, span or page (404); errNoRun is a missing run.
var (
	errNotFound = errors.New("not found")
	errNoRun    = fmt.Errorf("run %w", errNotFound)
)

// loadRun returns the run, from the cache when read less than CacheTTL ago.
func (s *Server) loadRun(ctx context.Context, traceID string) (*cachedRun, error) {
	traceID = strings.ToLower(strings.TrimSpace(traceID))
	if !isHex(traceID, 32) {
		return nil, fmt.Errorf("%w: trace id %q: want 32 hex characters", errBadRequest, traceID)
	}
	now := s.opts.Now()
	s.mu.Lock()
	if c, ok := s.runs[traceID]; ok && now.Sub(c.read) < s.opts.CacheTTL && !(c.live(now) && now.Sub(c.read) >= liveRefresh/2) {
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	run, err := s.opts.Reader.Run(ctx, traceID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoRun
	}
	if err != nil {
		return nil, err
	}
	c, err := s.arrange(ctx, run)
	if err != nil {
		return nil, err
	}
	c.read = now
	s.mu.Lock()
	// A few runs at most: a 10,000-span run is tens of MB in memory.
	for id, old := range s.runs {
		if now.Sub(old.read) >= s.opts.CacheTTL || len(s.runs) >= 8 {
			delete(s.runs, id)
		}
	}
	s.runs[traceID] = c
	s.details.Add(traceID, c.detail)
	s.mu.Unlock()
	return c, nil
}

// arrange reads the run through the read model (runview.Build: order, steps, counts, cost) and
// computes its rows and marks. Payloads are fetched per span when a panel first shows them, except
// what counting needs (recorded exchanges read from their bodies).
func (s *Server) arrange(ctx context.Context, run *store.Run) (*cachedRun, error) {
	o := runview.Options{Prices: s.opts.Prices, SessionKeys: s.opts.SessionKeys, LazyPayloads: true}
	if !s.opts.NoRehydrate {
		o.Resolver = s.resolver
	}
	v, err := runview.Build(ctx, run, o)
	if err != nil {
		return nil, err
	}
	c := &cachedRun{run: run, view: v, nodes: v.Nodes, byID: map[string]int{}, logsBy: map[string][]plog.LogRecord{},
		rehydrated: map[int]bool{}, start: v.Start, end: v.End, session: v.SessionID}
	t := v.Totals
	c.detail = runDetail{Spans: t.Spans, LLMCalls: int(t.LLMCalls), ToolCalls: int(t.ToolCalls), CostUSD: t.CostUSD,
		Unpriced: int(t.Unpriced), Alerts: int(t.Alerts), Divergences: int(t.Divergences)}
	agents := map[string]bool{}
	for i, n := range c.nodes {
		c.byID[n.SpanID()] = i
	}
	for i, n := range c.nodes {
		s := n.Span
		r := Row{I: i, SpanID: s.SpanID().String(), Parent: n.Parent, Depth: n.Depth, Name: s.Name(), Kind: spanKind(n),
			Start: ms(s.StartTimestamp().AsTime().Sub(c.start)), Dur: ms(s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime())),
			Error: s.Status().Code() == ptrace.StatusCodeError}
		if r.Dur < 0 {
			r.Dur = 0
		}
		if n.Depth == 0 {
			r.Parent = -1
		}
		if ex := n.Exchange; ex != nil {
			// A recorded exchange is named by what it asked and got, not its span name ("POST").
			r.Name = exchangeName(ex.Method, ex.URL, ex.Status)
		}
		if n.Step != nil && n.Step.LLMStep > 0 {
			c.steps = append(c.steps, i)
			r.Step = n.Step.LLMStep
			r.Model = n.Step.Model
		}
		if v, ok := s.Attributes().Get(attrTestCase); ok && c.detail.TestCase == "" {
			c.detail.TestCase = v.AsString()
			if v, ok := s.Attributes().Get(attrTestDataset); ok {
				c.detail.TestDataset = v.AsString()
			}
			if v, ok := s.Attributes().Get(attrTestVersion); ok {
				c.detail.TestVersion = v.AsString()
			}
		}
		parentIsAgent := func() bool { return r.Parent >= 0 && genai.IsAgentInvocation(c.nodes[r.Parent].Span.Attributes()) }
		if a := genai.SpanAgent(s, n.Resource.Attributes(), parentIsAgent); a != "" {
			agents[a] = true
		}
		c.rows = append(c.rows, r)
	}
	countChildren(c.rows)
	markUnfinished(c)
	for a := range agents {
		c.detail.Agents = append(c.detail.Agents, a)
	}
	sort.Strings(c.detail.Agents)
	if ss := run.Session; ss != nil && len(c.nodes) == 0 && ss.Agent != "" {
		c.detail.Agents = []string{ss.Agent}
	}
	// Every record naming a span is in that span's panel; the records about the run (runagain's
	// alerts and divergences, and records naming no span of the run) are the read model's
	// Records: listed above the timeline and pinned on it. The agent's own records of a span (a
	// call's gen_ai.* message events) are only in its panel.
	store.EachLogRecord(run.Logs, func(lr plog.LogRecord) {
		if !lr.SpanID().IsEmpty() {
			id := lr.SpanID().String()
			c.logsBy[id] = append(c.logsBy[id], lr)
		}
	})
	root := -1
	for i, r := range c.rows {
		if r.Depth == 0 {
			root = i
			break
		}
	}
	for _, rec := range v.Records {
		lr := rec.LogRecord
		m := Mark{Kind: "record", Name: rec.EventName, Message: lr.Body().AsString(), Row: -1, Attrs: map[string]string{},
			Time: rec.Time, SpanID: rec.SpanID, pin: -1}
		switch rec.EventName {
		case eventAlert:
			m.Kind = "alert"
			if k := runagainattr.AlertKind(lr.Attributes()); k != "" {
				m.Name = k
			}
		case eventDivergence:
			m.Kind = "divergence"
			if v, ok := lr.Attributes().Get("runagain.replay.divergence.field"); ok {
				m.Name = "replay diverged at " + v.AsString()
			}
		}
		lr.Attributes().Range(func(k string, v pcommon.Value) bool {
			m.Attrs[k] = v.AsString()
			return true
		})
		if ri, ok := c.byID[m.SpanID]; ok && m.SpanID != "" {
			m.Row = ri
		} else if m.Kind != "record" {
			// An alert or divergence naming no span of this run (a test run's divergence points
			// at the original's exchange) is pinned on the run's root: the chips and the
			// header count it, and its filter lands somewhere.
			m.pin = root
		}
		c.marks = append(c.marks, m)
	}
	sort.SliceStable(c.marks, func(i, j int) bool { return c.marks[i].Time.Before(c.marks[j].Time) })
	for i := range c.marks {
		m := &c.marks[i]
		m.I = i
		if m.Row < 0 && m.pin >= 0 && m.pin < len(c.rows) {
			c.rows[m.pin].Marks = append(c.rows[m.pin].Marks, i)
			m.At = ms(m.Time.Sub(c.start))
		} else if m.Row >= 0 {
			r := &c.rows[m.Row]
			// Pinned where it happened: at its time when inside the span, else at the span's end
			// (a divergence is recorded after the run, against the nearest recorded exchange).
			at := ms(m.Time.Sub(c.start))
			if at < r.Start || at > r.Start+r.Dur {
				at = r.Start + r.Dur
			}
			m.At = at
			r.Marks = append(r.Marks, i)
		} else {
			m.At = ms(m.Time.Sub(c.start))
		}
	}
	c.detail.Preview = previewOf(ctx, c)
	c.detail.DurationMS = ms(c.end.Sub(c.start))
	return c, nil
}

// span returns row i's span rehydrated (its payloads fetched on first use: View.Rehydrate) and
// the log records pointing at it, also rehydrated.
func (s *Server) span(ctx context.Context, c *cachedRun, i int) (ptrace.Span, []plog.LogRecord, error) {
	n := c.nodes[i]
	logs := c.logsBy[c.rows[i].SpanID]
	if s.opts.NoRehydrate {
		return n.Span, logs, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if !c.rehydrated[i] {
		c.rehydrated[i] = true
		if err := c.view.Rehydrate(ctx, i); err != nil {
			errs = append(errs, err)
		}
		for _, lr := range logs {
			if err := s.resolver.RehydrateLogRecord(ctx, lr); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return n.Span, logs, errors.Join(errs...)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
