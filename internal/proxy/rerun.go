// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	jsonspec "github.com/theory/jsonpath/spec"

	"github.com/elazarl/goproxy"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
)

// Attributes of a rerun: on every exchange span of the new run, and on its root span.
const (
	// AttrRerunSource is on each exchange of a rerun: "recording" (served from the original run),
	// "live" (an LLM request sent to its route's upstream) or "refused" (matched nothing; the
	// client got the divergence error).
	AttrRerunSource = runagainattr.RerunSource
	// AttrRerunOriginalSpan is the span id of the recorded exchange a "recording" exchange served.
	AttrRerunOriginalSpan = runagainattr.RerunOriginalSpan
	// AttrRerunLLMCall is the 1-based number of an LLM request in the rerun.
	AttrRerunLLMCall = runagainattr.RerunLLMCall
	// Root span attributes (set by the CLI): the original run, each change, --from-step, and the
	// first LLM call that went live.
	AttrRerunOriginalTrace  = runagainattr.RerunOriginalTrace
	AttrRerunChanges        = runagainattr.RerunChanges
	AttrRerunFromStep       = runagainattr.RerunFromStep
	AttrRerunFirstDeparture = runagainattr.RerunFirstDeparture
)

// DefaultLLMRoutes are the routes whose requests are LLM calls in a rerun: the default routes'
// names (a --route with one of these names replaces the upstream, not the meaning).
var DefaultLLMRoutes = []string{"openai", "anthropic", "gemini", "mistral", "groq", "cohere"}

// Edit is one --set change: the JSON value at Path in every outgoing LLM request body is
// replaced with Value.
type Edit struct {
	Spec  string // as given: "model=gpt-4.1"
	Path  string // "messages[0].content" or "$.messages[0].content"
	Value []byte // raw JSON
	path  bodyPath
	// member is the top-level key Path names when it names one ("temperature",
	// "$.temperature"): such an edit adds the member to a request object that lacks it (a
	// parameter the agent never sent), where any other path must name an existing value.
	member string
	// Step and API select the LLM calls the edit applies to (editselect.go): 0 and "" mean all.
	Step int
	API  string
}

// ParseEdit parses PATH=VALUE. VALUE is JSON when it parses as JSON (0, true, {"a":1},
// "quoted"), else the text as a JSON string (gpt-4.1); @FILE is FILE's content as a string.
// PATH names one value (bodypath.go): keys separated by ".", array elements as [N]
// (messages[0].content), or an RFC 9535 singular query ($.messages[-1].content).
func ParseEdit(spec string) (Edit, error) {
	step, api, rest, err := splitSelector(spec)
	if err != nil {
		return Edit{}, err
	}
	path, val, ok := strings.Cut(rest, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Edit{}, fmt.Errorf("--set %q: want PATH=VALUE, e.g. model=gpt-4.1 or messages[0].content=@prompt.txt", spec)
	}
	bp, err := parseBodyPath(path)
	if err != nil {
		return Edit{}, fmt.Errorf("--set %q: path %s: %w", spec, path, err)
	}
	if !bp.singular() {
		return Edit{}, fmt.Errorf("--set %q: path %s names more than one value ([*], a filter, a slice or ..): name one element ([N])", spec, path)
	}
	e := Edit{Spec: spec, Path: path, path: bp, Step: step, API: api}
	if m := topMemberRE.FindStringSubmatch(path); m != nil {
		e.member = m[1]
	}
	switch {
	case strings.HasPrefix(val, "@"):
		b, err := os.ReadFile(val[1:])
		if err != nil {
			return Edit{}, fmt.Errorf("--set %s: %w", path, err)
		}
		e.Value, _ = json.Marshal(string(b))
	case json.Valid([]byte(val)):
		e.Value = []byte(strings.TrimSpace(val))
	default:
		e.Value, _ = json.Marshal(val)
	}
	return e, nil
}

// exists reports whether the edit applies to body (a JSON document): its path names a value (a
// key in an object, an index in an array), or it names a top-level member and body is an object
// (the member is then added).
func (e Edit) exists(body []byte) bool {
	if _, ok := e.path.locate(body); ok {
		return true
	}
	return e.member != "" && gjson.ParseBytes(body).IsObject()
}

// topMemberRE matches a path naming one top-level member: name or $.name.
var topMemberRE = regexp.MustCompile(`^(?:\$\.)?([A-Za-z_][A-Za-z0-9_]*)$`)

// apply replaces the value at the edit's path in body, keeping the rest of the bytes as they
// are (sjson, at the value's normalized path).
func (e Edit) apply(body []byte) ([]byte, error) {
	np, ok := e.path.locate(body)
	if !ok {
		if e.member != "" && gjson.ParseBytes(body).IsObject() {
			return sjson.SetRawBytes(body, gjson.Escape(e.member), e.Value) // added: the agent never sent it
		}
		return nil, fmt.Errorf("no value at %s", e.Path)
	}
	comps := make([]string, 0, len(np))
	for _, sel := range np {
		switch s := sel.(type) {
		case jsonspec.Name:
			comps = append(comps, gjson.Escape(string(s)))
		case jsonspec.Index:
			comps = append(comps, strconv.Itoa(int(s)))
		}
	}
	return sjson.SetRawBytes(body, strings.Join(comps, "."), e.Value)
}

// RerunOptions configure the rerun mode of a Replayer.
type RerunOptions struct {
	// Edits change every outgoing LLM request body (from LLM call FromStep+1 on when FromStep > 0).
	Edits []Edit
	// FromStep > 0: LLM calls 1..FromStep are served from the recording (matched unedited; one
	// that no longer matches goes live), every later LLM call goes live. 0: an LLM call goes live
	// only when it no longer matches the recording.
	FromStep int
	// LLMRoutes name the routes whose requests are LLM calls; nil: DefaultLLMRoutes.
	LLMRoutes []string
	// RecordedTargets are the upstream URLs the LLM routes had when the run was recorded: a
	// recorded exchange under one of them is an LLM call too, so a --route that sends the live
	// calls to another upstream still finds the recording's calls. nil: only the routes' own.
	RecordedTargets []*url.URL
	// Root is the new run's root span: exchanges without a W3C traceparent become its children.
	Root Root
}

type rerunState struct {
	o        RerunOptions
	targets  []*url.URL
	recorded []*url.URL // RerunOptions.RecordedTargets
	rec      *Recorder
	llmCalls int
	live     int
	served   int
	refused  int
	first    *Departure
	changed  map[string][]int // Edit.Spec -> the LLM calls it changed
}

// Departure is where a rerun first left the recording.
type Departure struct {
	Request int    // 1-based number of the request
	LLMCall int    // 1-based LLM call number; 0 when the first departure was not an LLM call
	Method  string // of the request
	URL     string
	Reason  string // "changed" (no longer matches), "from-step", "refused"
}

func (r *Replayer) initRerun(o RerunOptions) error {
	names := o.LLMRoutes
	if names == nil {
		names = DefaultLLMRoutes
	}
	st := &rerunState{o: o, changed: map[string][]int{}, recorded: o.RecordedTargets}
	for _, n := range names {
		rt, ok := r.cfg.Routes[n]
		if !ok {
			return fmt.Errorf("LLM route %q is not a route (routes: %s)", n, strings.Join(r.cfg.Routes.Names(), ", "))
		}
		st.targets = append(st.targets, rt.Target)
	}
	n, err := r.checkEdits(o, st)
	if err != nil {
		return err
	}
	if o.FromStep > 0 && o.FromStep >= n && n > 0 {
		return fmt.Errorf("--from-step %d: the run has %d recorded LLM call(s), so no call would go live; give N below %d", o.FromStep, n, n)
	}
	if n == 0 && len(o.Edits) > 0 {
		return fmt.Errorf("--set: the run has no recorded request on an LLM route (%s); give the routes it was recorded with (--route NAME=URL, --llm-route NAME)", strings.Join(names, ", "))
	}
	cfg := r.cfg
	st.rec = NewRecorder(cfg, o.Root)
	r.gp.OnResponse().DoFunc(st.rec.onResponse)
	r.rerun = st
	return nil
}

// isLLM reports whether a request is an LLM call: one that sends a body (not GET, HEAD, OPTIONS
// or DELETE: an SDK's `GET /v1/models` is no model call) to a URL under an LLM route's target.
func (st *rerunState) isLLM(method string, u *url.URL) bool {
	return isLLMRequest(method, u, st.targets)
}

// isRecordedLLM is isLLM for a recorded exchange: under an LLM route's target now or when the
// run was recorded.
func (st *rerunState) isRecordedLLM(method string, u *url.URL) bool {
	return isLLMRequest(method, u, st.targets) || isLLMRequest(method, u, st.recorded)
}

func isLLMRequest(method string, u *url.URL, targets []*url.URL) bool {
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodDelete:
		return false
	}
	for _, t := range targets {
		if strings.EqualFold(u.Scheme, t.Scheme) && strings.EqualFold(u.Host, t.Host) &&
			(t.Path == "" || u.Path == t.Path || strings.HasPrefix(u.Path, t.Path+"/")) {
			return true
		}
	}
	return false
}

// rerunRequest handles one request in rerun mode: edits an LLM request, serves it from the
// recording when it still matches (and is before --from-step), sends an LLM request live
// otherwise, and refuses any other unmatched request as replay does. Every exchange is recorded.
func (r *Replayer) rerunRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	st := r.rerun
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
		req.Body.Close()
		if err != nil {
			return req, errorResponse(req, http.StatusBadGateway, "runagain rerun: reading the request body: "+err.Error())
		}
		body = b
	}
	llm := st.isLLM(req.Method, req.URL)
	call := 0
	var applied []string // the --set specs that changed this request's body
	forceLive := false
	if llm {
		r.mu.Lock()
		st.llmCalls++
		call = st.llmCalls
		r.mu.Unlock()
		if st.o.FromStep == 0 || call > st.o.FromStep {
			forceLive = st.o.FromStep > 0
			for _, e := range st.o.Edits {
				if !e.selects(call, req.URL.Path) {
					continue
				}
				if !e.exists(body) {
					if len(bytes.TrimSpace(body)) > 0 {
						r.cfg.Logger.Printf("runagain rerun: LLM call %d (%s %s) has no value at %s; sent without that change", call, req.Method, req.URL.Path, e.Path)
					}
					continue
				}
				nb, err := e.apply(body)
				if err != nil {
					return req, errorResponse(req, http.StatusBadGateway, fmt.Sprintf("runagain rerun: --set %s: %v", e.Path, err))
				}
				body = nb
				applied = append(applied, e.Spec)
				r.mu.Lock()
				st.changed[e.Spec] = append(st.changed[e.Spec], call)
				r.mu.Unlock()
			}
		}
	}
	setBody := func() {
		if body == nil {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	setBody()
	// Record the request as sent (edited) in the new run; the response handler completes it.
	req, _ = st.rec.onRequest(req, ctx)
	p, _ := ctx.UserData.(*pending)
	mark := func(source string, extra ...string) {
		if p == nil {
			return
		}
		p.extra = map[string]string{AttrRerunSource: source}
		if call > 0 {
			p.extra[AttrRerunLLMCall] = strconv.Itoa(call)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			p.extra[extra[i]] = extra[i+1]
		}
		if len(applied) > 0 {
			p.extra[runagainattr.RerunEdits] = strings.Join(applied, ",")
		}
	}
	live := r.norm.normalize(req.Method, req.URL, req.Header.Get("Content-Type"), body)
	r.mu.Lock()
	r.live++
	n := r.live
	if !forceLive {
		if q := r.queues[live.key()]; len(q) > 0 {
			e := q[0]
			r.queues[live.key()] = q[1:]
			e.used = true
			r.served++
			st.served++
			r.mu.Unlock()
			mark("recording", AttrRerunOriginalSpan, e.spanID.String())
			return req, r.response(req, rpcExchange(e.ex, e.req, live))
		}
	}
	if llm {
		reason := "changed"
		if forceLive {
			reason = "from-step"
		}
		st.live++
		if st.first == nil {
			st.first = &Departure{Request: n, LLMCall: call, Method: req.Method, URL: redactURL(r.cfg.Redactor, req.URL), Reason: reason}
		}
		r.mu.Unlock()
		mark("live")
		return req, nil // to the route's upstream, with the caller's headers (credentials)
	}
	if r.div != nil {
		d := r.div
		st.refused++
		r.mu.Unlock()
		mark("refused")
		return req, divergenceResponse(req, d, fmt.Sprintf("runagain rerun: stopped at request %d; request %d (%s %s) not served. %s",
			d.Request, n, req.Method, req.URL, d.Message()))
	}
	d := r.nearest(live, n, req)
	r.diverge(d)
	st.refused++
	if st.first == nil {
		st.first = &Departure{Request: n, Method: req.Method, URL: d.URL, Reason: "refused"}
	}
	r.mu.Unlock()
	r.cfg.Logger.Print(d.Message())
	mark("refused")
	return req, divergenceResponse(req, d, d.Message())
}

// RerunResult is what a rerun did.
type RerunResult struct {
	Result
	LLMCalls int        // LLM requests made
	Live     int        // LLM requests sent to their upstream
	Refused  int        // requests that matched nothing and were refused
	First    *Departure // nil when the rerun never left the recording
	Recorded int        // exchanges recorded in the new run
	// Changed names, per --set (Edit.Spec), the LLM calls (1-based) it changed.
	Changed map[string][]int
}

// RerunResult returns the outcome so far (zero value outside rerun mode).
func (r *Replayer) RerunResult() RerunResult {
	res := RerunResult{Result: r.Result()}
	if r.rerun == nil {
		return res
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.rerun
	res.LLMCalls, res.Live, res.Refused, res.First = st.llmCalls, st.live, st.refused, st.first
	res.Recorded = st.rec.Stats().Exchanges
	res.Changed = map[string][]int{}
	for k, v := range st.changed {
		res.Changed[k] = append([]int(nil), v...)
	}
	return res
}

// EmitSpans sends extra spans of the new run (its root span) with the recorded exchanges; call it
// after the server stopped and before Close.
func (r *Replayer) EmitSpans(td ptrace.Traces) {
	if r.rerun != nil {
		r.rerun.rec.Emit(td)
	}
}

// Emit is EmitSpans (agentrun.Holder).
func (r *Replayer) Emit(td ptrace.Traces) { r.EmitSpans(td) }

// Hold keeps the new run's exchanges that carry no traceparent instead of sending them, for a
// join with the agent's own trace (Recorder.Hold); rerun mode only, nothing otherwise.
func (r *Replayer) Hold() {
	if r.rerun != nil {
		r.rerun.rec.Hold()
	}
}

// TakeHeld ends the hold and returns the exchanges kept (Recorder.TakeHeld); nil outside rerun mode.
func (r *Replayer) TakeHeld() []ptrace.Traces {
	if r.rerun == nil {
		return nil
	}
	return r.rerun.rec.TakeHeld()
}

// EditSpecs lists the edits as given (PATH=VALUE), in order, for attributes and messages.
func EditSpecs(es []Edit) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Spec
	}
	return out
}
