// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/diff"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// inlineLimit bounds a value rendered inside a page; longer values show their first inlineLimit
// bytes and load whole on demand (/runs/{trace}/spans/{span}/attr?key=K).
const inlineLimit = 32 << 10

// firstRows is how many timeline rows the run page carries; the browser asks for the rest in
// pages of rowsPage as they scroll into view.
const (
	firstRows = 300
	rowsPage  = 500
)

var funcs = template.FuncMap{
	"ms":  fmtMS,
	"dur": func(d time.Duration) string { return fmtMS(ms(d)) },
	"usd": fmtUSD,
	// runUSD is a run's cost as the CLI prints it: "-" for a run with no cost and no token usage
	"runUSD":  func(usd float64, in, out int64) string { return pricing.FormatUSD(usd, 0, in+out > 0) },
	"short":   func(s string) string { return shorten(s, 12) },
	"id12":    func(s string) string { return s[:min(12, len(s))] },
	"join":    strings.Join,
	"time":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"rfc3339": localTime,
	"add":     func(a, b int) int { return a + b },
	"pct":     func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"pretty":  pretty,
	"list":    func(xs ...string) []string { return xs },
	"request": diff.FormatRequest,
}

// pretty is v as indented JSON, with <, > and & kept as they are (the page escapes them).
func pretty(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func fmtMS(v float64) string {
	switch {
	case v >= 60000:
		return fmt.Sprintf("%dm%02ds", int(v/60000), int(math.Mod(v, 60000)/1000))
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.0fms", v)
	default:
		return fmt.Sprintf("%.2fms", v)
	}
}

// fmtUSD formats a cost in USD as the CLI does (pricing.FormatUSD, its one form: "$0", six
// decimals below a cent so a priced call below $0.0001 is never shown as $0.0000, else four);
// the pages say beside it when calls are unpriced.
func fmtUSD(v float64) string { return pricing.FormatUSD(v, 0, true) }

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// render executes a page template into a buffer first, so an error becomes a 500, not half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(escapeBidi(buf.Bytes()))
}

var errBadRequest = errors.New("bad request")

// maxPage bounds the sessions page number (50 rows a page: 5*10^7 rows); maxCostFilter bounds
// "cost above" in USD. Both only keep the arithmetic finite; no real store reaches them.
const (
	maxPage       = 1_000_000
	maxCostFilter = 1e12
)

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, a...))
}

// notFoundf is a 404 error with a message.
func notFoundf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errNotFound, fmt.Sprintf(format, a...))
}

// ---- Sessions ----

// SessionsFilter is the sessions page's query (all optional).
type SessionsFilter struct {
	Since, Until string  // duration back from now (24h), date (2025-09-30) or RFC 3339 / datetime-local
	Model        string  // substring of a model name
	Agent        string  // substring of an agent name (gen_ai.agent.name)
	Session      string  // exact session id
	Pattern      string  // a failure pattern's ID (patterns.go): only its runs
	Errors       bool    // only runs with error spans
	Alerts       bool    // only runs with alerts or replay divergences
	CostMin      float64 // only runs costing more than this (USD)
	Query        string  // free text: ids, name, agents, models, input and outcome previews
	Sort         string  // a store.RunOrders key; "" newest first
	Asc          bool    // ascending (default descending)
	Page         int     // 1-based
}

type sessionRow struct {
	store.RunSummary
	D       runDetail
	ShortID string // the trace id cut where it differs from every other on the page (distinctIDs)
}

type sessionsView struct {
	Title      string
	F          SessionsFilter
	CostMinStr string
	Rows       []sessionRow
	Total      int
	More       bool // more than Total runs match (not counted past countCap)
	Page       int
	Pages      int
	From, To   int
	PrevURL    string
	NextURL    string
	SortURL    map[string]string // the list sorted by each key (descending; again: ascending)
	LastURL    string            // set when the page asked for is past the last one
	Order      string            // how the rows are ordered, in words ("newest first")
	// Searched is set when the filters that read each run (text, agent) stopped after the newest
	// Searched runs of the range (maxSearched): older runs were not searched.
	Searched int
	Err      string
}

// orderWords says how a listing sorted by key (a store.RunOrders key, "" for start) runs.
func orderWords(key string, asc bool) string {
	switch {
	case key == "" || key == store.OrderStart:
		if asc {
			return "oldest first"
		}
		return "newest first"
	case asc:
		return "by " + key + ", lowest first"
	}
	return "by " + key + ", highest first"
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := sessionsView{Title: "Sessions", F: SessionsFilter{Since: q.Get("since"), Until: q.Get("until"), Model: q.Get("model"),
		Agent: q.Get("agent"), Session: q.Get("session"), Pattern: strings.TrimSpace(q.Get("pattern")), Errors: q.Get("errors") != "", Alerts: q.Get("alerts") != ""}, CostMinStr: q.Get("cost_min")}
	v.F.Page, _ = strconv.Atoi(q.Get("page"))
	v.F.Query = strings.TrimSpace(q.Get("q"))
	v.F.Sort, v.F.Asc = q.Get("sort"), q.Get("order") == "asc"
	v.Order = orderWords(v.F.Sort, v.F.Asc)
	if !(store.RunOrder{Key: v.F.Sort}).Valid() {
		v.Err = fmt.Sprintf("sort %q: want one of %s", v.F.Sort, strings.Join(store.RunOrders, ", "))
		w.WriteHeader(http.StatusBadRequest)
		s.render(w, "sessions.html", v)
		return
	}
	v.SortURL = map[string]string{}
	for _, k := range store.RunOrders {
		qq := url.Values{}
		for kk, vals := range q {
			qq[kk] = vals
		}
		qq.Del("page")
		qq.Set("sort", k)
		qq.Del("order")
		if v.F.Sort == k && !v.F.Asc {
			qq.Set("order", "asc")
		}
		v.SortURL[k] = "/?" + qq.Encode()
	}
	// Page numbers are bounded so that (page-1)*PageSize cannot overflow: past the last page
	// the page is simply empty.
	v.F.Page = max(1, min(v.F.Page, maxPage))
	now := s.opts.Now()
	since, until, err1 := store.ParseTimeRange("since", v.F.Since, "until", v.F.Until, now)
	var err3 error
	if v.CostMinStr != "" {
		if v.F.CostMin, err3 = strconv.ParseFloat(v.CostMinStr, 64); err3 != nil || !(v.F.CostMin >= 0 && v.F.CostMin <= maxCostFilter) {
			err3 = fmt.Errorf("cost above %q: want a number of USD from 0 to %g", v.CostMinStr, float64(maxCostFilter))
		}
	}
	if err := errors.Join(err1, err3); err != nil {
		v.Err = err.Error()
		w.WriteHeader(http.StatusBadRequest)
		s.render(w, "sessions.html", v)
		return
	}
	rows, total, more, searched, err := s.searchSessions(r.Context(), v.F, since, until)
	if err != nil {
		v.Err = err.Error()
	}
	v.Rows, v.Total, v.More, v.Searched = rows, total, more, searched
	v.Pages = (total + s.opts.PageSize - 1) / s.opts.PageSize
	if more {
		v.Pages++ // at least one more page; how many is not counted
	}
	v.Page = v.F.Page
	if total > 0 {
		v.From = (v.Page-1)*s.opts.PageSize + 1
		v.To = v.From + len(rows) - 1
	}
	page := func(p int) string {
		qq := url.Values{}
		for k, vals := range q {
			qq[k] = vals
		}
		qq.Set("page", strconv.Itoa(p))
		return "/?" + qq.Encode()
	}
	if v.Pages > 0 && v.Page > v.Pages {
		// Past the last page: say so, and link the last one (not "4999901–4999900 of 2039").
		v.Err = fmt.Sprintf("page %d is past the last page: %d runs match, %d a page, so pages 1 to %d", v.Page, total, s.opts.PageSize, v.Pages)
		v.LastURL = page(v.Pages)
		v.From, v.To = 0, 0
		w.WriteHeader(http.StatusNotFound)
		s.render(w, "sessions.html", v)
		return
	}
	if v.Page > 1 {
		v.PrevURL = page(v.Page - 1)
	}
	if v.Page < v.Pages {
		v.NextURL = page(v.Page + 1)
	}
	s.render(w, "sessions.html", v)
}

// countCap bounds the matching runs the sessions page counts in start order, whatever the filter:
// past it the page says "more than countCap" instead of reading every run of a large store.
const countCap = 1000

// maxSortedRows bounds the rows the sessions page keeps in memory for a listing sorted by
// anything but start time (the best page*PageSize rows, at most this many): a page past it is
// empty and says so.
const maxSortedRows = 10_000

// maxSearched bounds the runs of the range that the filters reading each run (text, agent, and
// alerts on a store without a list of diverged runs) read for one page, newest first: past it
// the page lists what the newest maxSearched runs hold and says so, so that a search takes the
// same time on a store of 10^4 runs and of 10^6 (narrowing the range with since and until
// searches older runs). A var for the tests.
var maxSearched = 10_000

// sessions is searchSessions without the number of runs searched.
func (s *Server) sessions(ctx context.Context, f SessionsFilter, since, until time.Time) ([]sessionRow, int, bool, error) {
	page, n, more, _, err := s.searchSessions(ctx, f, since, until)
	return page, n, more, err
}

// searchSessions lists the runs matching f and returns the requested page, the number of
// matching runs, whether there are more than that, and, when a filter that reads each run
// stopped at maxSearched runs, that number (else 0). The runs are read newest first from the run index
// in pages (store.EachRun), never all at once, so memory is bounded by the page whatever the
// store holds:
//   - in start order (the default), with any filter, the walk stops once the page is full and
//     countCap matches are counted ("more than countCap");
//   - sorted by another key, with filters the run index holds (time range, session, cost,
//     errors), the page's rows come from the index's ranked listing (store.RankedRuns: one
//     ORDER BY ... LIMIT page*PageSize in each SQLite tier) and the matches are counted as in
//     start order;
//   - sorted with any other filter, or on a store that cannot rank, every run in the time range
//     is read and counted, keeping only the best page*PageSize rows (at most maxSortedRows).
//
// The cost, error and alerts filters are applied in the run index (store.RunFilter.MinCostUSD,
// ErrorsOnly and Flagged), so they read no run (on a store whose tiers cannot filter alerts, the
// alerts filter takes the index's alert count and the store's runs with a divergence record,
// store.DivergedRunLister; a store without that list reads each run); filters on agents and text
// read each candidate run once, at most maxSearched of them a page; the result is kept per run
// (a bounded cache, maxDetails) until its span count changes.
func (s *Server) searchSessions(ctx context.Context, f SessionsFilter, since, until time.Time) ([]sessionRow, int, bool, int, error) {
	// The alerts filter is the run index's (store.RunFilter.Flagged: its alert and divergence
	// counts, the runs_flagged index) where every tier filters it; else the index's alert count
	// and the store's list of runs with a divergence record (store.DivergedRunLister) when the
	// store has one; else each run.
	flagged := f.Alerts && store.FiltersRunIndex(s.opts.Reader)
	var diverged map[string]bool
	if f.Alerts && !flagged {
		var err error
		if diverged, err = store.DivergedSet(ctx, s.opts.Reader); err != nil {
			return nil, 0, false, 0, err
		}
	}
	alertsFromIndex := flagged || diverged != nil
	needDetail := f.Agent != "" || f.Alerts && !alertsFromIndex || f.Query != ""
	rf := store.RunFilter{Since: since, Until: until, SessionID: f.Session, MinCostUSD: f.CostMin, ErrorsOnly: f.Errors, Flagged: flagged}
	startOrder := f.Sort == "" || f.Sort == "start" && !f.Asc
	size := s.opts.PageSize
	from := (f.Page - 1) * size
	stopAt := max(f.Page*size, countCap) // matches counted before "more"
	keep := min(f.Page*size, maxSortedRows)
	var page, best []sessionRow
	// ranked: the sorted page came from the run index; the walk below only counts.
	ranked := false
	if !startOrder && !needDetail && f.Pattern == "" && f.Model == "" && (!f.Alerts || flagged) {
		sub := rf
		sub.Limit = keep
		rows, err := store.RankedRuns(ctx, s.opts.Reader, sub, store.RunOrder{Key: f.Sort, Asc: f.Asc})
		switch {
		case errors.Is(err, errors.ErrUnsupported):
		case err != nil:
			return nil, 0, false, 0, err
		default:
			ranked = true
			for i := from; i < min(from+size, len(rows)); i++ {
				page = append(page, sessionRow{RunSummary: rows[i]})
			}
		}
	}
	n, more, read, searched := 0, false, 0, 0
	visit := func(sum store.RunSummary) bool {
		if f.Model != "" && !anyContains(sum.Models, f.Model) {
			return true
		}
		if diverged != nil && sum.Alerts == 0 && !diverged[sum.TraceID] {
			return true
		}
		row := sessionRow{RunSummary: sum}
		if needDetail {
			if read >= maxSearched {
				searched, more = read, true
				return false
			}
			read++
			row.D = s.detail(ctx, sum)
			if f.Agent != "" && !anyContains(row.D.Agents, f.Agent) {
				return true
			}
			if f.Alerts && !alertsFromIndex && row.D.Alerts+row.D.Divergences == 0 {
				return true
			}
			if f.Query != "" && !matchesText(row, strings.ToLower(f.Query)) {
				return true
			}
		}
		if startOrder || ranked {
			if n >= stopAt {
				more = true
				return false
			}
			if startOrder && n >= from && n < from+size {
				page = append(page, row)
			}
			n++
			return true
		}
		n++
		if best = append(best, row); len(best) >= 2*keep {
			sortRows(best, f.Sort, !f.Asc)
			best = best[:keep]
		}
		return true
	}
	walk := visit
	var inPattern *patternPages
	if f.Pattern != "" {
		inPattern = &patternPages{s: s, ctx: ctx, id: f.Pattern, visit: visit}
		walk = inPattern.add
	}
	err := store.EachRun(ctx, s.opts.Reader, rf, walk)
	if err == nil && inPattern != nil {
		err = inPattern.close()
	}
	if err != nil {
		return nil, 0, false, 0, err
	}
	if !startOrder && !ranked {
		sortRows(best, f.Sort, !f.Asc)
		if from < len(best) {
			page = best[from:min(from+size, len(best))]
		}
	}
	if !needDetail {
		for i := range page {
			page[i].D = s.detail(ctx, page[i].RunSummary)
		}
	}
	distinctIDs(page)
	return page, n, more, searched, nil
}

func anyContains(list []string, sub string) bool {
	sub = strings.ToLower(sub)
	for _, x := range list {
		if strings.Contains(strings.ToLower(x), sub) {
			return true
		}
	}
	return false
}

// detail aggregates one listed run. A cold-tier row (a whole session, no spans kept) is taken
// from its summary.
func (s *Server) detail(ctx context.Context, sum store.RunSummary) runDetail {
	if sum.Tier == store.TierCold {
		return runDetail{Spans: sum.Spans, Alerts: int(sum.Alerts), CostUSD: sum.CostUSD, Unpriced: int(sum.Unpriced)}
	}
	d, ok := s.details.Get(sum.TraceID)
	if ok && d.Spans == sum.Spans {
		return d
	}
	run, err := s.opts.Reader.Run(ctx, sum.TraceID)
	if err != nil {
		return runDetail{Spans: sum.Spans, CostUSD: sum.CostUSD}
	}
	c, err := s.arrange(ctx, run)
	if err != nil {
		return runDetail{Spans: sum.Spans, CostUSD: sum.CostUSD}
	}
	d = c.detail
	if sum.CostUSD > 0 && d.CostUSD == 0 {
		d.CostUSD = sum.CostUSD
	}
	s.details.Add(sum.TraceID, d)
	return d
}

// ---- Run ----

type runView struct {
	Title    string
	TraceID  string
	Session  string
	Tier     string
	Start    time.Time
	Duration float64
	D        runDetail
	Tokens   genai.Usage
	Errors   int
	Marks    []Mark
	Timeline string            // JSON: {trace, total, dur, rows (first page), marks}
	Counts   map[string]int    // rows of each filter kind (find.go)
	First    map[string]string // span id of the first row of each filter kind
	Panel    *panelView
	NoSpans  bool
	// Incomplete says why the run is not whole (runview: no root, missing parents; unfinished
	// spans); Live: it may still be receiving spans, the page refreshes every RefreshS seconds.
	Incomplete string
	Live       bool
	RefreshS   int
	// CSRF is the token of the "Add to dataset" form; Datasets whether a dataset store is set.
	CSRF     string
	Datasets bool
	// Pattern is the run's failure pattern (patterns.go); nil for a passing run.
	Pattern *runPattern
}

type timelineJSON struct {
	Trace string  `json:"trace"`
	Total int     `json:"total"`
	Dur   float64 `json:"dur"`
	Rows  []Row   `json:"rows"`
	Marks []Mark  `json:"marks"`
	Sel   int     `json:"sel"`
	Page  int     `json:"page"`
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	v := runView{Title: "Run " + shorten(c.run.TraceID, 8), TraceID: c.run.TraceID, Session: c.session, Tier: c.run.Tier,
		Start: c.start, Duration: ms(c.end.Sub(c.start)), D: c.detail, Marks: c.marks, NoSpans: len(c.rows) == 0}
	v.Tokens = genai.Usage{Input: c.view.Totals.InputTokens, Output: c.view.Totals.OutputTokens}
	v.Errors = int(c.view.Totals.Errors)
	if c.view.Incomplete || c.unfinished > 0 {
		v.Incomplete = c.view.IncompleteReason
		if c.unfinished > 0 {
			if v.Incomplete != "" {
				v.Incomplete += "; "
			}
			v.Incomplete += fmt.Sprintf("%d span%s not finished", c.unfinished, map[bool]string{true: "s", false: ""}[c.unfinished > 1])
		}
		v.Live, v.RefreshS = c.live(s.opts.Now()), int(liveRefresh/time.Second)
	}
	v.CSRF, v.Datasets = s.csrf, s.opts.Datasets != nil
	v.Pattern = patternOf(c.view)
	v.Counts, v.First = c.kindCounts(), map[string]string{}
	for _, k := range findKinds {
		v.First[k] = c.firstOf(k)
	}
	sel := -1
	if id := r.URL.Query().Get("span"); id != "" {
		i, ok := c.byID[strings.ToLower(id)]
		if !ok {
			s.failPage(w, r, badRequest("span %q is not in run %s", id, c.run.TraceID))
			return
		}
		sel = i
	} else if st := r.URL.Query().Get("step"); st != "" {
		n, _ := strconv.Atoi(st)
		if n < 1 || n > len(c.steps) {
			s.failPage(w, r, badRequest("step %q: run %s has LLM steps 1..%d", st, c.run.TraceID, len(c.steps)))
			return
		}
		sel = c.steps[n-1]
	}
	first := c.rows[:min(firstRows, len(c.rows))]
	if sel >= firstRows {
		// The selected row's page comes along so it shows without a round trip.
		from := sel - sel%rowsPage
		first = append(append([]Row{}, first...), c.rows[from:min(from+rowsPage, len(c.rows))]...)
	}
	tl, _ := json.Marshal(timelineJSON{Trace: c.run.TraceID, Total: len(c.rows), Dur: v.Duration, Rows: first, Marks: c.marks, Sel: sel, Page: rowsPage})
	v.Timeline = string(tl)
	if sel >= 0 {
		p, err := s.panel(r.Context(), c, sel)
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		v.Panel = p
	}
	s.render(w, "run.html", v)
}

// rowsAPI serves timeline rows [offset, offset+limit) as JSON (limit at most rowsPage).
func (s *Server) rowsAPI(w http.ResponseWriter, r *http.Request) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	lim, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if lim <= 0 || lim > rowsPage {
		lim = rowsPage
	}
	off = max(0, min(off, len(c.rows)))
	writeJSON(w, map[string]any{"offset": off, "total": len(c.rows), "rows": c.rows[off:min(off+lim, len(c.rows))]})
}

// writeJSON answers v as JSON, bidi controls escaped as on the pages (escapeBidi).
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(escapeBidi(b))
}

// ---- Span panel ----

type attrView struct {
	Key       string
	Type      string
	Value     string // at most inlineLimit bytes
	Size      int
	Truncated bool
	Ref       bool // a payload reference (K_ref) left as is
	// Pretty is the value indented when it is a JSON object or array (recorded key order);
	// shown folded-open, with copy and download of the exact recorded bytes beside it.
	Pretty string
}

type partView struct {
	Part
	Text      string // Content, cut at inlineLimit
	Truncated bool
	Size      int
}

type messageView struct {
	Role         string
	Parts        []partView
	FinishReason string
}

type panelView struct {
	TraceID       string
	Row           Row
	Steps         int
	KindLabel     string
	ParentID      string
	ParentMissing bool // the parent span is not in the run (not received, or lost)
	Status        string
	StatusMessage string
	Model         string
	Provider      string
	Usage         genai.Usage
	CostUSD       float64
	Unpriced      bool
	CoveredBy     string // a recorded exchange counted as part of this instrumented call (runview rule)
	// PlacedUnder is the call a recorded exchange is shown under when that is not its recorded
	// parent (runview.Placement); nil otherwise.
	PlacedUnder  *placedView
	Messages     *CallMessages
	MessagesErr  string
	InputUnread  *genai.Unread // the attribute holding the input in a form no dialect reads
	OutputUnread *genai.Unread
	System       []partView
	Input        []messageView
	Output       []messageView
	Tools        string
	ToolsSize    int
	Recorded     *recordedInput
	Attrs        []attrView
	Resource     []attrView
	Events       []eventView
	Logs         []logView // the agent's own log records of the span, by time
	Marks        []Mark
	Tool         *toolView
	Exceptions   []exceptionView
	OpenRecorded bool // the step page opens "as recorded" (what show --step N prints)
	PayloadErr   string
	// Exchanges are the recorded HTTP exchanges of the span (runview.ExchangesOf): the span's
	// own when it is one, else those its LLM or tool call made, each as request and response.
	Exchanges []exchangeView
	// MCPExchanges are the MCP exchanges of the span (runview.MCPExchangesOf), the same way.
	MCPExchanges []mcpView
	IsExchange   bool // the span is a recorded exchange: its attributes start folded
}

// placedView says under which call an exchange is shown, and why (runview.Placement).
type placedView struct{ How, SpanID, Why string }

var placedWhy = map[runview.Placement]string{
	runview.PlacedByLink: "the call its inferred span link names (runagain.link.type inferred), not its recorded parent",
	runview.PlacedByTime: "the call it overlaps in time with the same request model or tool (the counting rule), not its recorded parent",
}

// unreadOf returns cm's Unread entry for side, nil if none.
func unreadOf(cm CallMessages, side string) *genai.Unread {
	for i := range cm.Unread {
		if cm.Unread[i].Side == side {
			return &cm.Unread[i]
		}
	}
	return nil
}

// toolView is a tool call's name, arguments and result (gen_ai.tool.*, else OpenInference
// input.value / output.value), JSON values indented.
type toolView struct {
	Name         string
	Args, Result attrView
}

func toolOf(a pcommon.Map) *toolView {
	t := &toolView{Name: genai.ToolName(a)}
	val := func(keys ...string) attrView {
		for _, k := range keys {
			if v, ok := a.Get(k); ok {
				s := v.AsString()
				var j any
				if json.Unmarshal([]byte(s), &j) == nil {
					if _, isStr := j.(string); !isStr {
						s = pretty(j)
					}
				}
				return attrView{Key: k, Value: cut(s), Size: len(s), Truncated: len(s) > inlineLimit}
			}
		}
		return attrView{}
	}
	t.Args = val(genai.ToolArgumentKeys...)
	t.Result = val(genai.ToolResultKeys...)
	if t.Args.Key == "" && t.Result.Key == "" {
		return nil
	}
	return t
}

type eventView struct {
	Name  string
	At    float64
	Attrs []attrView
}

// logView is one of the agent's own log records of a span (not a message event).
type logView struct {
	Name, Severity string
	At             float64 // ms from the run's start
	Body           string  // cut at inlineLimit; BodySize is the whole body's size
	BodySize       int
	Attrs          []attrView
}

type recordedInput struct {
	*runview.StepInput
	Values []attrView
}

var kindLabels = map[string]string{kindAgent: "agent", kindLLM: "LLM call", kindTool: "tool call", kindHTTP: "HTTP exchange (fixture)", kindMCP: "MCP exchange (fixture)", kindOther: "span"}

func (s *Server) panel(ctx context.Context, c *cachedRun, i int) (*panelView, error) {
	sp, logs, perr := s.span(ctx, c, i)
	row := c.rows[i]
	node := c.nodes[i]
	a := sp.Attributes()
	ea := node.Effective.Attributes() // the span as read: GenAI attributes derived from an older recording's bodies
	p := &panelView{TraceID: c.run.TraceID, Row: row, Steps: len(c.steps), KindLabel: kindLabels[row.Kind],
		Status: sp.Status().Code().String(), StatusMessage: sp.Status().Message(), Model: genai.Model(ea),
		Provider: genai.Provider(ea), Usage: node.RecordedUsage}
	if perr != nil {
		p.PayloadErr = "some payloads stay as references: " + perr.Error()
	}
	if !sp.ParentSpanID().IsEmpty() {
		p.ParentID = sp.ParentSpanID().String()
		_, in := c.byID[p.ParentID]
		p.ParentMissing = !in
	}
	p.CostUSD, p.Unpriced = node.Cost.USD, node.Cost.Unpriced
	if cb := node.Verdict.CoveredBy; cb >= 0 {
		p.CoveredBy = c.nodes[cb].SpanID()
	}
	if node.Placement != runview.PlacedAsRecorded && node.Parent >= 0 {
		p.PlacedUnder = &placedView{How: string(node.Placement), SpanID: c.nodes[node.Parent].SpanID(), Why: placedWhy[node.Placement]}
	}
	p.Attrs = attrViews(a)
	p.Resource = attrViews(c.nodes[i].Resource.Attributes())
	for j := 0; j < sp.Events().Len(); j++ {
		ev := sp.Events().At(j)
		p.Events = append(p.Events, eventView{Name: ev.Name(), At: ms(ev.Timestamp().AsTime().Sub(c.start)), Attrs: attrViews(ev.Attributes())})
	}
	for _, lr := range logs {
		// The agent's own records of this span; a call's message events are its messages, and
		// runagain's records are the marks above.
		name := runview.EventName(lr)
		if genai.IsMessageEvent(name) || strings.HasPrefix(name, runagainattr.EventPrefix) {
			continue
		}
		body := lr.Body().AsString()
		p.Logs = append(p.Logs, logView{Name: name, Severity: lr.SeverityText(), At: ms(runview.RecordTime(lr).Sub(c.start)),
			Body: cut(body), BodySize: len(body), Attrs: attrViews(lr.Attributes())})
	}
	for _, m := range c.marks {
		if m.Row == i {
			p.Marks = append(p.Marks, m)
		}
	}
	if row.Kind == kindTool {
		p.Tool = toolOf(a)
	}
	p.Exceptions = exceptionsOf(sp, row.Start)
	p.Exchanges = s.exchanges(ctx, c, i)
	p.MCPExchanges = s.mcpExchanges(ctx, c, i)
	p.IsExchange = len(p.Exchanges) == 1 && p.Exchanges[0].Own || len(p.MCPExchanges) == 1 && p.MCPExchanges[0].Own
	if row.Step > 0 {
		if row.Kind != kindLLM {
			p.KindLabel = "LLM call · " + p.KindLabel
		}
		cm, err := llmCallMessages(node.Effective, logs)
		if err != nil {
			p.MessagesErr = err.Error()
		}
		{ // every form read is shown, beside the error naming what could not be
			p.Messages = &cm
			p.InputUnread, p.OutputUnread = unreadOf(cm, "input"), unreadOf(cm, "output")
			p.OpenRecorded = p.OpenRecorded || p.InputUnread != nil || p.OutputUnread != nil
			p.System = partViews(cm.SystemInstructions)
			p.Input = messageViews(cm.Input)
			p.Output = messageViews(cm.Output)
			if cm.ToolDefinitions != nil {
				b := pretty(cm.ToolDefinitions)
				p.ToolsSize = len(b)
				p.Tools = cut(b)
			}
		}
	}
	if row.Step > 0 {
		c.mu.Lock()
		in, err := c.view.StepInput(row.Step)
		c.mu.Unlock()
		if err == nil {
			ri := &recordedInput{StepInput: in}
			for _, k := range in.Keys {
				val := in.Raw[k]
				ri.Values = append(ri.Values, attrView{Key: k, Value: cut(val), Size: len(val), Truncated: len(val) > inlineLimit})
			}
			p.Recorded = ri
		}
	}
	return p, nil
}

func cut(v string) string {
	if len(v) <= inlineLimit {
		return v
	}
	// Cut on a rune boundary.
	n := inlineLimit
	for n > 0 && v[n]&0xC0 == 0x80 {
		n--
	}
	return v[:n]
}

func attrViews(m pcommon.Map) []attrView {
	var out []attrView
	m.Range(func(k string, v pcommon.Value) bool {
		s := v.AsString()
		av := attrView{Key: k, Type: v.Type().String(), Value: cut(s), Size: len(s), Truncated: len(s) > inlineLimit,
			Ref: strings.HasSuffix(k, genai.RefSuffix)}
		if !av.Truncated {
			av.Pretty, _ = prettyJSON(s)
		}
		out = append(out, av)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func partViews(ps []Part) []partView {
	out := make([]partView, 0, len(ps))
	for _, p := range ps {
		text := p.Content
		switch p.Type {
		case "text", "reasoning", "":
		case "tool_call", "tool_call_response":
			text = ""
		default:
			text = pretty(p) // blob, uri, file, server tool calls: shown as JSON text, never loaded
		}
		out = append(out, partView{Part: p, Text: cut(text), Truncated: len(text) > inlineLimit, Size: len(text)})
	}
	return out
}

func messageViews(ms []Message) []messageView {
	out := make([]messageView, 0, len(ms))
	for _, m := range ms {
		out = append(out, messageView{Role: m.Role, Parts: partViews(m.Parts), FinishReason: m.FinishReason})
	}
	return out
}

func (s *Server) spanIndex(w http.ResponseWriter, r *http.Request) (*cachedRun, int, bool) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return nil, 0, false
	}
	i, ok := c.byID[strings.ToLower(r.PathValue("span"))]
	if !ok {
		s.failPage(w, r, fmt.Errorf("%w: span %s is not in run %s", errNotFound, r.PathValue("span"), c.run.TraceID))
		return nil, 0, false
	}
	return c, i, true
}

// panelFragment serves a span's panel as an HTML fragment (the run page inserts it).
func (s *Server) panelFragment(w http.ResponseWriter, r *http.Request) {
	c, i, ok := s.spanIndex(w, r)
	if !ok {
		return
	}
	p, err := s.panel(r.Context(), c, i)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	s.render(w, "panel", p)
}

// attrValue serves one attribute's whole value as text/plain (the page's "load all" buttons).
// ?event=N reads the N-th span event's attribute, ?resource=1 the resource's, ?input=1 the
// recorded step input value.
func (s *Server) attrValue(w http.ResponseWriter, r *http.Request) {
	c, i, ok := s.spanIndex(w, r)
	if !ok {
		return
	}
	sp, _, _ := s.span(r.Context(), c, i)
	m := sp.Attributes()
	q := r.URL.Query()
	if q.Get("resource") != "" {
		m = c.nodes[i].Resource.Attributes()
	}
	if e := q.Get("event"); e != "" {
		n, err := strconv.Atoi(e)
		if err != nil || n < 0 || n >= sp.Events().Len() {
			s.failPage(w, r, badRequest("event %q: span has %d events", e, sp.Events().Len()))
			return
		}
		m = sp.Events().At(n).Attributes()
	}
	var val string
	ctype := "text/plain; charset=utf-8"
	if q.Get("part") != "" {
		// part=in.M.P / out.M.P / sys.P: a message part's text.
		cm, err := llmCallMessages(c.nodes[i].Effective, nil)
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		t, ok := partText(cm, q.Get("part"))
		if !ok {
			s.failPage(w, r, badRequest("part %q not found", q.Get("part")))
			return
		}
		val = t
	} else if q.Get("input") != "" && c.rows[i].Step > 0 {
		c.mu.Lock()
		in, err := c.view.StepInput(c.rows[i].Step)
		c.mu.Unlock()
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		v, ok := in.Raw[q.Get("key")]
		if !ok {
			s.failPage(w, r, badRequest("key %q is not part of step %d's input", q.Get("key"), in.Step))
			return
		}
		val = v
	} else {
		v, ok := m.Get(q.Get("key"))
		if !ok {
			s.failPage(w, r, fmt.Errorf("%w: attribute %q not found", errNotFound, q.Get("key")))
			return
		}
		val = v.AsString()
		if v.Type() == pcommon.ValueTypeBytes {
			// A body that is not UTF-8 is recorded as bytes: answer those, not their base64.
			val, ctype = string(v.Bytes().AsRaw()), "application/octet-stream"
		}
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if q.Get("download") != "" {
		// The exact recorded bytes, as a file named after the span and key.
		w.Header().Set("Content-Disposition", `attachment; filename="`+c.rows[i].SpanID+"-"+safeName(q.Get("key"))+`.txt"`)
	}
	_, _ = w.Write([]byte(val))
}

func partText(cm CallMessages, ref string) (string, bool) {
	f := strings.Split(ref, ".")
	idx := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			return -1
		}
		return n
	}
	switch {
	case len(f) == 2 && f[0] == "sys":
		if p := idx(f[1]); p >= 0 && p < len(cm.SystemInstructions) {
			return cm.SystemInstructions[p].Content, true
		}
	case len(f) == 3 && (f[0] == "in" || f[0] == "out"):
		msgs := cm.Input
		if f[0] == "out" {
			msgs = cm.Output
		}
		if m := idx(f[1]); m >= 0 && m < len(msgs) {
			if p := idx(f[2]); p >= 0 && p < len(msgs[m].Parts) {
				return msgs[m].Parts[p].Content, true
			}
		}
	}
	return "", false
}

// spanOTLP serves the span with its resource and scope as an OTLP JSON traces document.
func (s *Server) spanOTLP(w http.ResponseWriter, r *http.Request) {
	c, i, ok := s.spanIndex(w, r)
	if !ok {
		return
	}
	sp, _, _ := s.span(r.Context(), c, i)
	n := c.nodes[i]
	var jm ptrace.JSONMarshaler
	raw, err := jm.MarshalTraces(store.SpanTraces(n.ResourceSpans, n.ScopeSpans, sp))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		out.Reset()
		out.Write(raw)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = out.WriteTo(w)
}

// ---- Step N ----

type stepView struct {
	Title   string
	TraceID string
	Step    int
	Steps   int
	Panel   *panelView
}

// stepPage is the stable URL of step N: what `runagain show TRACE --step N` prints (the
// recorded input, byte for byte) with the step's panel.
func (s *Server) stepPage(w http.ResponseWriter, r *http.Request) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	switch {
	case len(c.steps) == 0:
		s.failPage(w, r, fmt.Errorf("%w: run %s has no LLM call, so no step pages", errNotFound, c.run.TraceID))
		return
	case err != nil:
		s.failPage(w, r, badRequest("step %q is not a number: run %s has LLM steps 1..%d", r.PathValue("n"), c.run.TraceID, len(c.steps)))
		return
	case n < 1 || n > len(c.steps):
		s.failPage(w, r, fmt.Errorf("%w: step %d: run %s has LLM steps 1..%d", errNotFound, n, c.run.TraceID, len(c.steps)))
		return
	}
	p, err := s.panel(r.Context(), c, c.steps[n-1])
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	p.OpenRecorded = true
	s.render(w, "step.html", stepView{Title: fmt.Sprintf("Step %d · run %s", n, shorten(c.run.TraceID, 8)), TraceID: c.run.TraceID, Step: n, Steps: len(c.steps), Panel: p})
}
