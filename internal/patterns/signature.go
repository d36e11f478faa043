// SPDX-License-Identifier: Apache-2.0

// Package patterns finds the failures that repeat across runs (issue 32): a deterministic
// failure signature per run, computed from the read model (internal/runview) when a run is
// indexed, and the grouping of runs by signature into patterns, near-identical signatures merged
// by named rules. No LLM judge, no free text that changes run to run: a signature is built only
// from what the run recorded, normalised (Normalise), and its pattern ID is a hash of its
// canonical form, so the same failure has the same ID in every store and every release that
// keeps SignatureVersion.
//
// # The signature
//
// FromView reads one runview.View into a Signature:
//
//	errors          the spans that failed (status ERROR, a recorded exchange answered >= 400 or
//	                broken off), in run order, each as {kind, name, type, status, message, step,
//	                count}: kind llm | tool | http | mcp | agent | span; name the LLM operation
//	                (chat, embeddings; not the model), the tool name, the HTTP route ("POST
//	                /v1/chat/completions", Route), the MCP method, else the span name (Normalise);
//	                kind process, name "command", type "exit N" for the root span runagain writes
//	                around a command it ran (proxy --record, test, replay, rerun: the span with
//	                process.exit.code), whatever its name and arguments, so a crash recorded by
//	                proxy --record and the same crash under runagain test are one failure;
//	                type error.type, else the first exception.type; status the HTTP status class
//	                (4xx, 5xx, or "transport" for no response) of an exchange or of a tool span's
//	                http.response.status_code; message the status message, else the exchange's
//	                error, Normalise-d. A transport exchange under a failed LLM or tool step
//	                (covered by it, internal/runview/rule) is that step's failure, not another.
//	finish_reasons  abnormal stops of LLM calls, named as gen_ai.response.finish_reasons names
//	                them: "length" (OpenAI length, Anthropic max_tokens, Gemini MAX_TOKENS) and
//	                "content_filter" (content_filter, Anthropic refusal, Gemini SAFETY,
//	                RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII); sorted, each once
//	alerts          agent_guard alert kinds of the run's records (alert.kind: loop, cost_spike,
//	                tool_error_spike, context_pressure); sorted, each once
//	divergences     replay divergence fields (runagain.replay.divergence.field, Field: indexes
//	                as [*]); sorted, each once
//	shape           the step sequence before the first failure: tool names in order (the tool
//	                steps; an HTTP step as its route), consecutive repeats of one tool collapsed
//	                into "name+" (a loop); at most MaxShape entries, the last kept
//	incomplete      "no_root" (no root span arrived), "orphans" (spans whose parent is not stored)
//
// A run is failing when any of errors, finish_reasons, alerts, divergences or incomplete is
// set, or when the view counts errors, alerts or divergences that none of them names (a cold-tier
// record keeps only counts): such a run's signature is Uncategorised, and it is listed as the
// pattern "uncategorised", never dropped. A run with none is passing: its signature is the zero
// value (Failing false) and it has no pattern.
//
// # Patterns and the merge rules
//
// A Signature is a variant; its Pattern is the Signature with what the merge rules ignore
// cleared (Canonical). The rules, each named in Pattern.MergedBy when variants of a pattern
// differ in it:
//
//	step_index    the same error at a different step index (errors[].step)
//	repeat_count  the same error a different number of times in the run (errors[].count)
//	steps_before  the same failure after different steps (shape)
//
// ID is "p" + the first 12 hex digits of the SHA-256 of Canonical's JSON; VariantID the same of
// the whole signature ("v" + 12 hex). Both are stable across stores and releases while
// SignatureVersion stays.
package patterns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/runview/rule"
)

// SignatureVersion is part of every canonical form: a change to what a signature holds or how
// it is normalised bumps it (and so every ID), and indexes recompute the signatures of older
// versions when they list them (sqlitestore patternRuns), so a store written before an upgrade
// groups its old runs with the new ones. History:
//
//	1  first release (issue 32)
//	2  the root span of a command runagain ran that exited non-zero is kind process, name
//	   command, type "exit N", whatever verb ran it (record, replay, test): version 1 named it
//	   after the verb, so the same crash recorded and tested had two patterns
const SignatureVersion = 2

// MaxShape bounds Signature.Shape (entries): the steps nearest the failure are kept.
const MaxShape = 12

// MaxErrors bounds Signature.Errors (distinct errors): the first in run order are kept.
const MaxErrors = 8

// Uncategorised is the ID of the pattern of failing runs whose signature names nothing.
var Uncategorised = Signature{Version: SignatureVersion, Uncategorised: true}.ID()

// Merge rule names (Pattern.MergedBy).
const (
	RuleStepIndex   = "step_index"
	RuleRepeatCount = "repeat_count"
	RuleStepsBefore = "steps_before"
)

// Error kinds (Error.Kind).
const (
	KindLLM   = "llm"
	KindTool  = "tool"
	KindHTTP  = "http"
	KindMCP   = "mcp"
	KindAgent = "agent"
	KindSpan  = "span"
	// KindProcess is the command runagain ran (a root span with process.exit.code).
	KindProcess = "process"
)

// AttrProcessExitCode is the exit code runagain records on the root span of a command it ran
// (OpenTelemetry semantic conventions, process.exit.code).
const AttrProcessExitCode = "process.exit.code"

// Signature is what failed in one run and how, independent of ids, timestamps and free text
// (package documentation, "The signature"). Slices are in canonical order; the JSON form is the
// canonical form hashed by ID and VariantID.
type Signature struct {
	Version       int      `json:"v"`
	Errors        []Error  `json:"errors,omitempty"`
	FinishReasons []string `json:"finish_reasons,omitempty"`
	Alerts        []string `json:"alerts,omitempty"`
	Divergences   []string `json:"divergences,omitempty"`
	Shape         []string `json:"shape,omitempty"`
	Incomplete    []string `json:"incomplete,omitempty"`
	// Uncategorised: the run is failing and none of the fields above names why.
	Uncategorised bool `json:"uncategorised,omitempty"`
}

// Error is one failing span of a signature.
type Error struct {
	Kind    string `json:"kind"`              // llm | tool | http | mcp | agent | span | process
	Name    string `json:"name"`              // operation, tool name, route, MCP method or span name
	Type    string `json:"type,omitempty"`    // error.type, else exception.type
	Status  string `json:"status,omitempty"`  // 4xx | 5xx | transport
	Message string `json:"message,omitempty"` // Normalise(status message)
	// Step is the 1-based step index of the failure (0 for a span that is not a step); Count how
	// many spans of the run failed alike. Both cleared by Canonical (step_index, repeat_count).
	Step  int `json:"step,omitempty"`
	Count int `json:"count,omitempty"`
}

func (e Error) key() string {
	return e.Kind + "\x00" + e.Name + "\x00" + e.Type + "\x00" + e.Status + "\x00" + e.Message
}

// Failing reports whether the signature names a failure (or is Uncategorised).
func (s Signature) Failing() bool {
	return s.Uncategorised || len(s.Errors) > 0 || len(s.FinishReasons) > 0 || len(s.Alerts) > 0 ||
		len(s.Divergences) > 0 || len(s.Incomplete) > 0
}

// Canonical is the signature with what the merge rules ignore cleared: the pattern's form.
func (s Signature) Canonical() Signature {
	c := s
	c.Shape = nil
	if len(s.Errors) > 0 {
		c.Errors = make([]Error, len(s.Errors))
		for i, e := range s.Errors {
			e.Step, e.Count = 0, 0
			c.Errors[i] = e
		}
	}
	return c
}

// JSON is the canonical JSON of s (field order fixed, slices as held).
func (s Signature) JSON() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // strings and ints always encode
	}
	return b
}

// ID is the pattern ID of s: "p" + 12 hex digits of the SHA-256 of Canonical().JSON(); "" for a
// passing run.
func (s Signature) ID() string {
	if !s.Failing() {
		return ""
	}
	return patternIDOf(s.Canonical().JSON())
}

// VariantID is the ID of the whole signature: "v" + 12 hex digits; "" for a passing run.
func (s Signature) VariantID() string {
	if !s.Failing() {
		return ""
	}
	return variantIDOf(s.JSON())
}

// Keys returns ID, VariantID and JSON of s, marshalling s twice rather than once for each (the
// writers store all three for each failing run); "", "" and nil for a passing run.
func (s Signature) Keys() (id, variantID string, js []byte) {
	if !s.Failing() {
		return "", "", nil
	}
	js = s.JSON()
	return patternIDOf(s.Canonical().JSON()), variantIDOf(js), js
}

// patternIDOf and variantIDOf are ID and VariantID of a canonical signature's JSON and of a whole
// one's.
func patternIDOf(canonical []byte) string { return "p" + hash12(canonical) }
func variantIDOf(js []byte) string        { return "v" + hash12(js) }

func hash12(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Parse reads a signature's JSON (Signature.JSON).
func Parse(b []byte) (Signature, error) {
	var s Signature
	if err := json.Unmarshal(b, &s); err != nil {
		return Signature{}, fmt.Errorf("patterns: signature: %w", err)
	}
	return s, nil
}

// Title is a one-line description of the signature for listings, such as
// `tool search_web: ToolError "<q>: upstream returned HTTP <n>" · finish length · alert loop`.
func (s Signature) Title() string {
	if s.Uncategorised {
		return "uncategorised (failing, nothing recorded says why)"
	}
	var parts []string
	for i, e := range s.Errors {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more errors", len(s.Errors)-3))
			break
		}
		t := e.Kind + " " + e.Name + ":"
		if e.Status != "" {
			t += " " + e.Status
		}
		if e.Type != "" {
			t += " " + e.Type
		}
		if e.Message != "" && e.Message != e.Type {
			t += " " + strconv.Quote(e.Message)
		}
		parts = append(parts, strings.TrimSuffix(t, ":"))
	}
	for _, f := range s.FinishReasons {
		parts = append(parts, "finish "+f)
	}
	for _, a := range s.Alerts {
		parts = append(parts, "alert "+a)
	}
	for _, d := range s.Divergences {
		parts = append(parts, "divergence "+d)
	}
	if len(s.Incomplete) > 0 {
		parts = append(parts, "incomplete ("+strings.Join(s.Incomplete, ", ")+")")
	}
	return strings.Join(parts, " · ")
}

// Finish reasons as the signature names them, and the provider spellings read as each (OpenAI,
// Anthropic stop_reason, Gemini finishReason; gen_ai.response.finish_reasons carries them as
// the provider sent them).
var finishReasons = map[string]string{
	"length": "length", "max_tokens": "length", "MAX_TOKENS": "length", "model_length": "length",
	"content_filter": "content_filter", "refusal": "content_filter", "SAFETY": "content_filter",
	"RECITATION": "content_filter", "BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter",
	"SPII": "content_filter",
}

// Incomplete flags.
const (
	IncompleteNoRoot  = "no_root"
	IncompleteOrphans = "orphans"
)

// IncompleteOnly is the signature of a run whose only failure is being incomplete (roots root
// spans, orphans orphan spans: IncompleteFlags), as the run indexes compute it from their row
// without reading the run: its pattern id, variant id and signature JSON.
func IncompleteOnly(roots, orphans int64) (patternID, variantID string, sig []byte) {
	s := Signature{Version: SignatureVersion, Incomplete: IncompleteFlags(roots, orphans)}
	return s.ID(), s.VariantID(), s.JSON()
}

// IncompleteFlags are the incomplete flags of a run with roots root spans and orphans orphan
// spans (store.Completeness's inputs).
func IncompleteFlags(roots, orphans int64) []string {
	var f []string
	if roots == 0 {
		f = append(f, IncompleteNoRoot)
	}
	if orphans > 0 {
		f = append(f, IncompleteOrphans)
	}
	return f
}

// FromView computes the signature of one run from its read model (package documentation,
// "The signature"). It reads only the view: the spans as read (Node.Effective), the counting
// rule's steps and verdicts, the exchanges and the records; it changes nothing.
func FromView(v *runview.View) Signature {
	s := Signature{Version: SignatureVersion}
	if v == nil {
		return s
	}
	errs := map[string]int{} // key -> index in s.Errors
	failAt := -1             // node index of the first failure
	finish := map[string]bool{}
	for i, n := range v.Nodes {
		if n.Verdict.CoveredBy >= 0 {
			continue // the transport of a step above it: that step's failure
		}
		a := n.Effective.Attributes()
		if n.Kind == genai.KindLLM || (n.Step != nil && n.Step.Kind == rule.StepLLM) {
			for _, r := range genai.FinishReasons(a) {
				if f, ok := finishReasons[r]; ok {
					finish[f] = true
					if failAt < 0 {
						failAt = i
					}
				}
			}
		}
		e, ok := nodeError(n)
		if !ok {
			continue
		}
		if failAt < 0 {
			failAt = i
		}
		if n.Step != nil {
			e.Step = n.Step.Index
		}
		k := e.key()
		if j, seen := errs[k]; seen {
			s.Errors[j].Count++
			continue
		}
		if len(s.Errors) == MaxErrors {
			continue
		}
		e.Count = 1
		errs[k] = len(s.Errors)
		s.Errors = append(s.Errors, e)
	}
	s.FinishReasons = sortedKeys(finish)
	alerts, fields := map[string]bool{}, map[string]bool{}
	patternAlerts := int64(0) // agent_guard's alerts about a pattern: not part of a signature
	for _, r := range v.Records {
		a := r.LogRecord.Attributes()
		switch r.EventName {
		case runagainattr.EventAlert:
			k := runagainattr.AlertKind(a)
			if k == runagainattr.AlertKindPatternNew || k == runagainattr.AlertKindPatternRateJump {
				patternAlerts++
				continue
			}
			if k == "" {
				k = "alert"
			}
			alerts[Normalise(k)] = true
			if failAt < 0 && r.Node >= 0 {
				failAt = r.Node
			}
		case runagainattr.EventDivergence:
			f := strAttr(a, runagainattr.DivergenceField)
			if f == "" {
				f = "request"
			}
			fields[Field(f)] = true
			if failAt < 0 && r.Node >= 0 {
				failAt = r.Node
			}
		}
	}
	s.Alerts, s.Divergences = sortedKeys(alerts), sortedKeys(fields)
	if v.Incomplete {
		s.Incomplete = IncompleteFlags(v.Roots, v.Orphans)
	}
	if !s.Failing() {
		if v.Totals.Errors > 0 || v.Totals.Alerts-patternAlerts > 0 || v.Totals.Divergences > 0 {
			return Signature{Version: SignatureVersion, Uncategorised: true}
		}
		return Signature{Version: SignatureVersion}
	}
	s.Shape = shape(v, failAt)
	return s
}

// nodeError reads a failing span: status ERROR, or a recorded exchange answered >= 400 or broken
// off.
func nodeError(n *runview.Node) (Error, bool) {
	sp := n.Effective
	a := sp.Attributes()
	ex := n.Exchange
	failed := sp.Status().Code() == ptrace.StatusCodeError
	status := ""
	if ex != nil {
		switch {
		case ex.Status >= 400:
			failed, status = true, strconv.Itoa(ex.Status/100)+"xx"
		case ex.Status == 0 && ex.Error != "":
			failed, status = true, "transport"
		}
	} else if c, ok := a.Get("http.response.status_code"); ok {
		if code := c.Int(); c.Type() == pcommon.ValueTypeInt && code >= 400 {
			status = strconv.FormatInt(code/100, 10) + "xx"
			failed = failed || n.Kind == genai.KindTool
		}
	}
	if !failed {
		return Error{}, false
	}
	e := Error{Status: status, Type: strAttr(a, genai.AttrErrorType)}
	if e.Type == "" {
		e.Type = exceptionType(sp)
	}
	msg := sp.Status().Message()
	if msg == "" && ex != nil {
		msg = ex.Error
	}
	e.Message = Normalise(msg)
	e.Type = cut(e.Type, MaxMessage)
	code, isCommand := a.Get(AttrProcessExitCode)
	switch {
	case isCommand && n.Depth == 0 && n.Step == nil:
		e.Kind, e.Name = KindProcess, "command"
		if e.Type == "" {
			e.Type = "exit " + code.AsString()
		}
	case n.Step != nil && n.Step.Kind == rule.StepLLM, n.Kind == genai.KindLLM:
		e.Kind = KindLLM
		e.Name = strAttr(a, genai.AttrOperationName)
		if e.Name == "" {
			e.Name = "chat"
		}
	case n.Kind == genai.KindTool, n.Step != nil && n.Step.Kind == rule.StepTool:
		e.Kind = KindTool
		e.Name = genai.ToolName(a)
		if e.Name == "" {
			e.Name = Normalise(sp.Name())
		}
	case strAttr(a, "mcp.method.name") != "":
		e.Kind, e.Name = KindMCP, strAttr(a, "mcp.method.name")
	case ex != nil:
		e.Kind, e.Name = KindHTTP, ex.Method+" "+Route(ex.URL)
	case n.Kind == genai.KindAgent:
		e.Kind, e.Name = KindAgent, genai.AgentName(a, n.Resource.Attributes())
		if e.Name == "" {
			e.Name = Normalise(sp.Name())
		}
	default:
		e.Kind, e.Name = KindSpan, Normalise(sp.Name())
		if m, ok := a.Get("http.request.method"); ok {
			if r := strAttr(a, "http.route"); r != "" {
				e.Kind, e.Name = KindHTTP, m.AsString()+" "+Route(r)
			}
		}
	}
	return e, true
}

func exceptionType(sp ptrace.Span) string {
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		if ev := evs.At(i); ev.Name() == "exception" {
			if t := strAttr(ev.Attributes(), "exception.type"); t != "" {
				return t
			}
		}
	}
	return ""
}

// shape is the tool steps (an HTTP step as its route) before node failAt (all when -1), in
// order, consecutive repeats collapsed into "name+", the last MaxShape kept.
func shape(v *runview.View, failAt int) []string {
	var out []string
	for _, st := range v.Steps {
		if failAt >= 0 && st.Node >= failAt {
			break
		}
		var name string
		switch st.Kind {
		case rule.StepTool:
			name = st.Name
		case rule.StepHTTP:
			name = st.Name
			if i := strings.IndexByte(name, ' '); i > 0 {
				name = name[:i] + " " + Route(name[i+1:])
			}
		default:
			continue
		}
		if k := len(out); k > 0 && (out[k-1] == name || out[k-1] == name+"+") {
			out[k-1] = name + "+"
			continue
		}
		out = append(out, name)
	}
	if len(out) > MaxShape {
		out = out[len(out)-MaxShape:]
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func strAttr(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// SpanSignal reports whether a span's attributes alone can make its run fail besides its
// status (which writers check themselves): an abnormal finish reason, or an
// http.response.status_code >= 400. Writers call it per span to decide which runs to sign
// (sqlitestore "Failure signatures in the run index"); it is a few map lookups.
func SpanSignal(attrs pcommon.Map) bool {
	for _, r := range genai.FinishReasons(attrs) {
		if _, ok := finishReasons[r]; ok {
			return true
		}
	}
	if c, ok := attrs.Get("http.response.status_code"); ok && c.Type() == pcommon.ValueTypeInt && c.Int() >= 400 {
		return true
	}
	return false
}

// SummarySignal is SpanSignal over a warm span summary's attributes JSON (the object
// store.Summarize writes: json.Marshal of the raw values, keys sorted). It reads the two
// attributes' values where their keys stand, without decoding the object: the warm writers call
// it for every summary, and most summaries' objects are a few hundred bytes to kilobytes. A
// finish-reasons value it cannot read (not a string or an array of strings) counts as a signal,
// so a run that may fail is marked and its signature, computed through the read model, decides.
func SummarySignal(attrsJSON string) bool {
	if attrsJSON == "" || attrsJSON == "{}" {
		return false
	}
	if v, ok := valueAfter(attrsJSON, `"`+genai.AttrFinishReasons+`":`); ok && reasonSignal(v) {
		return true
	}
	if v, ok := valueAfter(attrsJSON, `"http.response.status_code":`); ok {
		return len(v) > 2 && v[0] >= '4' && v[0] <= '9' && v[1] >= '0' && v[1] <= '9'
	}
	return false
}

// reasonSignal reports whether the JSON value v (a finish reason or an array of them) holds a
// failing finish reason, or is not a string, an array of strings or null (read as a signal,
// SummarySignal). It reads v with gjson: encoding/json's decode was most of SummarySignal's cost
// at ingest.
func reasonSignal(v string) bool {
	if !gjson.Valid(v) {
		return true
	}
	r := gjson.Parse(v)
	switch {
	case r.Type == gjson.String:
		_, ok := finishReasons[r.Str]
		return ok
	case r.Type == gjson.Null:
		return false
	case !r.IsArray():
		return true
	}
	signal := false
	r.ForEach(func(_, e gjson.Result) bool {
		switch e.Type {
		case gjson.String:
			_, signal = finishReasons[e.Str]
		case gjson.Null:
		default:
			signal = true
		}
		return !signal
	})
	return signal
}

// valueAfter returns the JSON value text after key (a quoted key and its colon) in the object
// text obj: a string up to its closing quote, an array up to its first ']' (finish reasons hold
// no bracket), any other value up to the next ',' or '}'. A key text inside a string value is
// escaped (\"), so the first occurrence not preceded by a backslash is the key.
func valueAfter(obj, key string) (string, bool) {
	off := 0
	for {
		i := strings.Index(obj[off:], key)
		if i < 0 {
			return "", false
		}
		i += off
		if i > 0 && obj[i-1] == '\\' {
			off = i + len(key)
			continue
		}
		v := strings.TrimLeft(obj[i+len(key):], " ")
		switch {
		case strings.HasPrefix(v, `"`):
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case '\\':
					j++
				case '"':
					return v[:j+1], true
				}
			}
			return v, true
		case strings.HasPrefix(v, "["):
			if j := strings.IndexByte(v, ']'); j >= 0 {
				return v[:j+1], true
			}
			return v, true
		default:
			if j := strings.IndexAny(v, ",}"); j >= 0 {
				return v[:j], true
			}
			return v, true
		}
	}
}
