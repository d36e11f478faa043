// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// patternID is the shape of a pattern id (patterns.Signature.ID).
var patternID = regexp.MustCompile(`^p[0-9a-f]{12}$`)

// Expectation is one check of a new run; exactly one field is set.
type Expectation struct {
	// Output checks the run's final output: the text of the last output message of its last LLM call.
	Output *OutputExpect `yaml:"output,omitempty" json:"output,omitempty"`
	// Tools checks the sequence of tool calls the model made (in run order).
	Tools *ToolsExpect `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Budgets: USD (genai-prices table, internal/pricing), tokens (input + output over every LLM
	// call), steps (LLM calls), duration (first span start to last span end, Go duration syntax).
	MaxCostUSD  *float64 `yaml:"max_cost_usd,omitempty" json:"max_cost_usd,omitempty"`
	MaxTokens   *int64   `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	MaxSteps    *int64   `yaml:"max_steps,omitempty" json:"max_steps,omitempty"`
	MaxDuration string   `yaml:"max_duration,omitempty" json:"max_duration,omitempty"`
	// NoAlert: no agent_guard alert (event runagain.alert) of this alert.kind ("loop", ...); "any" for none at all.
	NoAlert string `yaml:"no_alert,omitempty" json:"no_alert,omitempty"`
	// Replay: "strict" (no request may diverge from the recording) or "diverge_after:N" (requests
	// 1..N must match; later ones may diverge).
	Replay string `yaml:"replay,omitempty" json:"replay,omitempty"`
	// NoPattern: the run's failure signature must not fall in this failure pattern
	// (internal/patterns: its Signature.ID, "p" + 12 hex digits), the check of a case frozen from
	// a pattern (AddFromPattern).
	NoPattern string `yaml:"no_pattern,omitempty" json:"no_pattern,omitempty"`
}

// OutputExpect compares the final output; exactly one of Equals, Contains, Regex, JSONPath is set.
// JSONPath (gjson syntax, e.g. "answer.city" or "items.0") reads the output as JSON and compares
// the value there with Value as JSON values.
type OutputExpect struct {
	Equals   *string `yaml:"equals,omitempty" json:"equals,omitempty"`
	Contains *string `yaml:"contains,omitempty" json:"contains,omitempty"`
	Regex    *string `yaml:"regex,omitempty" json:"regex,omitempty"`
	JSONPath string  `yaml:"json_path,omitempty" json:"json_path,omitempty"`
	Value    any     `yaml:"value,omitempty" json:"value,omitempty"`
}

// ToolsExpect is the expected sequence of tool calls: Names exactly, in order; Arguments, when
// given, are compared as JSON values per call (a null entry leaves that call's arguments out).
type ToolsExpect struct {
	Names     []string `yaml:"names" json:"names"`
	Arguments []any    `yaml:"arguments,omitempty" json:"arguments,omitempty"`
}

// Name is how a failure line names the expectation, e.g. `output contains "Paris"`.
func (e Expectation) Name() string {
	switch {
	case e.Output != nil:
		o := e.Output
		switch {
		case o.Equals != nil:
			return fmt.Sprintf("output equals %q", clip(*o.Equals, 60))
		case o.Contains != nil:
			return fmt.Sprintf("output contains %q", clip(*o.Contains, 60))
		case o.Regex != nil:
			return fmt.Sprintf("output matches /%s/", *o.Regex)
		}
		return fmt.Sprintf("output JSON %s = %s", o.JSONPath, jsonStr(o.Value))
	case e.Tools != nil:
		if len(e.Tools.Names) == 0 {
			return "no tool calls"
		}
		calls := make([]string, len(e.Tools.Names))
		for i, n := range e.Tools.Names {
			calls[i] = n
			if i < len(e.Tools.Arguments) && e.Tools.Arguments[i] != nil {
				calls[i] += "(" + clip(jsonStr(e.Tools.Arguments[i]), 60) + ")"
			}
		}
		return "tool calls " + strings.Join(calls, ", ")
	case e.MaxCostUSD != nil:
		return fmt.Sprintf("max_cost_usd %g", *e.MaxCostUSD)
	case e.MaxTokens != nil:
		return fmt.Sprintf("max_tokens %d", *e.MaxTokens)
	case e.MaxSteps != nil:
		return fmt.Sprintf("max_steps %d", *e.MaxSteps)
	case e.MaxDuration != "":
		return "max_duration " + e.MaxDuration
	case e.NoAlert != "":
		return "no_alert " + e.NoAlert
	case e.Replay != "":
		return "replay " + e.Replay
	case e.NoPattern != "":
		return "no_pattern " + e.NoPattern
	}
	return "(empty expectation)"
}

// Validate reports an expectation with no or several kinds, or a malformed value.
func (e Expectation) Validate() error {
	n := 0
	for _, set := range []bool{e.Output != nil, e.Tools != nil, e.MaxCostUSD != nil, e.MaxTokens != nil, e.MaxSteps != nil,
		e.MaxDuration != "", e.NoAlert != "", e.Replay != "", e.NoPattern != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("give exactly one of output, tools, max_cost_usd, max_tokens, max_steps, max_duration, no_alert, replay, no_pattern (got %d)", n)
	}
	if e.NoPattern != "" && !patternID.MatchString(e.NoPattern) {
		return fmt.Errorf("no_pattern: %q is not a pattern id (p and 12 hex digits, as runagain patterns lists them)", e.NoPattern)
	}
	if o := e.Output; o != nil {
		k := 0
		for _, set := range []bool{o.Equals != nil, o.Contains != nil, o.Regex != nil, o.JSONPath != ""} {
			if set {
				k++
			}
		}
		if k != 1 {
			return errors.New("output: give exactly one of equals, contains, regex, json_path")
		}
		if o.Regex != nil {
			if _, err := regexp.Compile(*o.Regex); err != nil {
				return fmt.Errorf("output regex: %w", err)
			}
		}
	}
	if e.Tools != nil && len(e.Tools.Arguments) > 0 && len(e.Tools.Arguments) != len(e.Tools.Names) {
		return fmt.Errorf("tools: %d arguments for %d names", len(e.Tools.Arguments), len(e.Tools.Names))
	}
	// A budget that cannot hold (NaN compares false, so NaN would pass every run) or is negative
	// is an error, not a check that silently passes or always fails.
	if c := e.MaxCostUSD; c != nil && !(*c >= 0 && !math.IsInf(*c, 1)) {
		return fmt.Errorf("max_cost_usd: %g is not a budget (want a finite number of USD, at least 0)", *c)
	}
	if n := e.MaxTokens; n != nil && *n < 0 {
		return fmt.Errorf("max_tokens: %d is negative", *n)
	}
	if n := e.MaxSteps; n != nil && *n < 0 {
		return fmt.Errorf("max_steps: %d is negative", *n)
	}
	if e.MaxDuration != "" {
		d, err := time.ParseDuration(e.MaxDuration)
		if err != nil {
			return fmt.Errorf("max_duration: %q is not a duration (want e.g. 30s, 2m)", e.MaxDuration)
		}
		if d < 0 {
			return fmt.Errorf("max_duration: %s is negative", e.MaxDuration)
		}
	}
	if e.Replay != "" {
		if _, err := e.divergeAfter(); err != nil {
			return err
		}
	}
	return nil
}

// divergeAfter is -1 for strict, else N.
func (e Expectation) divergeAfter() (int, error) {
	if e.Replay == "strict" {
		return -1, nil
	}
	if s, ok := strings.CutPrefix(e.Replay, "diverge_after:"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("replay: %q is neither strict nor diverge_after:N", e.Replay)
}

// ParseExpect parses a --expect flag value:
//
//	output=TEXT  output~TEXT (contains)  output/REGEX  output.PATH=JSON (JSON value at a gjson path)
//	output=recorded           the recorded run's final output, equal
//	tools=NAME,NAME...        tool call names in order ("tools=" for none)
//	tools=recorded            the recorded tool calls, names and arguments
//	max_cost_usd=N  max_tokens=N  max_steps=N  max_duration=30s
//	no_alert=KIND|any         replay=strict  replay=diverge_after:N
//
// "recorded" values are read from rec (the facts of the run being frozen).
func ParseExpect(s string, rec *Facts) (Expectation, error) {
	var e Expectation
	bad := func(err error) (Expectation, error) { return Expectation{}, fmt.Errorf("--expect %q: %w", s, err) }
	switch {
	case strings.HasPrefix(s, "output~"):
		v := s[len("output~"):]
		e.Output = &OutputExpect{Contains: &v}
	case strings.HasPrefix(s, "output/"):
		v := s[len("output/"):]
		e.Output = &OutputExpect{Regex: &v}
	case strings.HasPrefix(s, "output="):
		v := s[len("output="):]
		if v == "recorded" {
			if rec == nil || !rec.HasOutput {
				return bad(errors.New("the recorded run has no final output (no LLM call with an output message)"))
			}
			v = rec.Output
		}
		e.Output = &OutputExpect{Equals: &v}
	case strings.HasPrefix(s, "output."):
		p, v, ok := strings.Cut(s[len("output."):], "=")
		if !ok || p == "" {
			return bad(errors.New("want output.PATH=JSON"))
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v // a bare string
		}
		e.Output = &OutputExpect{JSONPath: p, Value: val}
	case strings.HasPrefix(s, "tools="):
		v := s[len("tools="):]
		if v == "recorded" {
			if rec == nil {
				return bad(errors.New("no recorded run"))
			}
			e.Tools = &ToolsExpect{Names: []string{}}
			for _, tc := range rec.Tools {
				e.Tools.Names = append(e.Tools.Names, tc.Name)
				e.Tools.Arguments = append(e.Tools.Arguments, tc.Arguments)
			}
			break
		}
		e.Tools = &ToolsExpect{Names: []string{}}
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				e.Tools.Names = append(e.Tools.Names, n)
			}
		}
	default:
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return bad(errors.New("want KIND=VALUE (output, tools, max_cost_usd, max_tokens, max_steps, max_duration, no_alert, replay)"))
		}
		switch k {
		case "max_cost_usd", "max_cost":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return bad(fmt.Errorf("%s: %q is not a number of USD", k, v))
			}
			e.MaxCostUSD = &f
		case "max_tokens", "max_steps":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return bad(fmt.Errorf("%s: %q is not a whole number", k, v))
			}
			if k == "max_tokens" {
				e.MaxTokens = &n
			} else {
				e.MaxSteps = &n
			}
		case "max_duration":
			e.MaxDuration = v
		case "no_alert":
			e.NoAlert = v
		case "replay":
			e.Replay = v
		case "no_pattern":
			e.NoPattern = v
		default:
			return bad(fmt.Errorf("unknown kind %q", k))
		}
	}
	if err := e.Validate(); err != nil {
		return bad(err)
	}
	return e, nil
}

// Failure is a failed expectation: its name, what it wanted and what the run had.
type Failure struct {
	Expectation string `json:"expectation"`
	Expected    string `json:"expected"`
	Got         string `json:"got"`
}

func (f *Failure) String() string {
	return fmt.Sprintf("%s: expected %s, got %s", f.Expectation, f.Expected, f.Got)
}

// Check evaluates one expectation against the facts of a new run; nil means it holds.
func (e Expectation) Check(f *Facts) *Failure {
	fail := func(expected, got string) *Failure {
		return &Failure{Expectation: e.Name(), Expected: expected, Got: got}
	}
	switch {
	case e.Output != nil:
		o := e.Output
		var want string
		switch {
		case o.Equals != nil:
			want = strconv.Quote(clip(*o.Equals, 200))
		case o.Contains != nil:
			want = "output containing " + strconv.Quote(*o.Contains)
		case o.Regex != nil:
			want = "output matching /" + *o.Regex + "/"
		default:
			want = o.JSONPath + " = " + jsonStr(o.Value)
		}
		if !f.HasOutput {
			got := "no final output (no LLM call with an output message)"
			if d := f.Divergence; d != nil {
				got = fmt.Sprintf("no final output (replay diverged at request %d: %s)", d.Request, d.Detail)
			}
			return fail(want, got)
		}
		got := strconv.Quote(clip(f.Output, 200))
		switch {
		case o.Equals != nil:
			if f.Output != *o.Equals {
				return fail(want, got)
			}
		case o.Contains != nil:
			if !strings.Contains(f.Output, *o.Contains) {
				return fail(want, got)
			}
		case o.Regex != nil:
			if !regexp.MustCompile(*o.Regex).MatchString(f.Output) {
				return fail(want, got)
			}
		default:
			if !gjson.Valid(f.Output) {
				return fail("JSON output with "+want, got)
			}
			r := gjson.Get(f.Output, o.JSONPath)
			if !r.Exists() {
				return fail(want, "no value at "+o.JSONPath+" in "+got)
			}
			if !jsonEqual(r.Value(), o.Value) {
				return fail(jsonStr(o.Value), r.Raw)
			}
		}
	case e.Tools != nil:
		got := make([]string, len(f.Tools))
		for i, t := range f.Tools {
			got[i] = t.Name
		}
		if !reflect.DeepEqual(got, e.Tools.Names) && !(len(got) == 0 && len(e.Tools.Names) == 0) {
			return fail("["+strings.Join(e.Tools.Names, ", ")+"]", "["+strings.Join(got, ", ")+"]")
		}
		for i, want := range e.Tools.Arguments {
			if want == nil {
				continue
			}
			if !jsonEqual(f.Tools[i].Arguments, want) {
				return fail(fmt.Sprintf("%s arguments %s", f.Tools[i].Name, jsonStr(want)), jsonStr(f.Tools[i].Arguments))
			}
		}
	case e.MaxCostUSD != nil:
		if f.CostUSD > *e.MaxCostUSD {
			return fail(fmt.Sprintf("at most $%g", *e.MaxCostUSD), fmt.Sprintf("$%g", f.CostUSD))
		}
		if f.Unpriced > 0 {
			return fail(fmt.Sprintf("at most $%g", *e.MaxCostUSD), fmt.Sprintf("%d LLM calls of unknown price (cost unknown)", f.Unpriced))
		}
	case e.MaxTokens != nil:
		if f.Tokens > *e.MaxTokens {
			return fail(fmt.Sprintf("at most %d tokens", *e.MaxTokens), fmt.Sprintf("%d tokens", f.Tokens))
		}
	case e.MaxSteps != nil:
		if f.Steps > *e.MaxSteps {
			return fail(fmt.Sprintf("at most %d steps (LLM calls)", *e.MaxSteps), fmt.Sprintf("%d", f.Steps))
		}
	case e.MaxDuration != "":
		d, _ := time.ParseDuration(e.MaxDuration)
		if f.Duration > d {
			return fail("at most "+d.String(), f.Duration.String())
		}
	case e.NoAlert != "":
		for _, a := range f.Alerts {
			if e.NoAlert == "any" || a == e.NoAlert {
				return fail("no "+e.NoAlert+" alert", "alert "+a)
			}
		}
	case e.NoPattern != "":
		if f.Pattern == e.NoPattern {
			return fail("not in pattern "+e.NoPattern, "in pattern "+e.NoPattern+": "+f.PatternTitle)
		}
	case e.Replay != "":
		n, _ := e.divergeAfter()
		if d := f.Divergence; d != nil && (n < 0 || d.Request <= n) {
			want := "no divergence"
			if n >= 0 {
				want = fmt.Sprintf("no divergence in requests 1..%d", n)
			}
			return fail(want, fmt.Sprintf("request %d diverged: %s", d.Request, d.Detail))
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	na, errA := normJSON(a)
	nb, errB := normJSON(b)
	return errA == nil && errB == nil && reflect.DeepEqual(na, nb)
}

// normJSON round-trips a value through JSON so YAML, gjson and encoding/json values compare.
func normJSON(v any) (any, error) {
	if s, ok := v.(string); ok && json.Valid([]byte(s)) && (strings.HasPrefix(strings.TrimSpace(s), "{") || strings.HasPrefix(strings.TrimSpace(s), "[")) {
		v = json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func jsonStr(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
