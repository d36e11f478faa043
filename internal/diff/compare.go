// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// comparePair compares two aligned steps. full lists every message (Options.Step).
//
// Two LLM steps that share one reading of their messages (readAll: recorded with the same
// content) have the same messages, system instructions, tool definitions, tool calls and
// output, so unless every message is to be listed those are not compared again (the slow path
// would find every message "same" and keep none of them). Two tool steps whose arguments (or
// results) are the same recorded text have the same arguments (results). Everything else
// (request, finish reasons, error, model) is compared on every pair.
func comparePair(x, y *step, full bool) Pair {
	a, b := x.Step, y.Step
	p := Pair{A: &a, B: &b, Metrics: &Metrics{
		InputTokens: idelta(a.InputTokens, b.InputTokens), OutputTokens: idelta(a.OutputTokens, b.OutputTokens),
		CostUSD: fdelta(a.CostUSD, b.CostUSD), DurationMS: fdelta(a.DurationMS, b.DurationMS),
		StatusA: a.Status, StatusB: b.Status,
	}}
	var diffs []Difference
	add := func(d Difference) { diffs = append(diffs, d) }
	if x.Kind == KindLLM && y.Kind == KindLLM && x.calls != nil && x.calls == y.calls && !full && fastPaths {
		compareRequests(a.Request, b.Request, a.Model, b.Model, add)
	} else if x.Kind == KindLLM && y.Kind == KindLLM && x.calls != nil && y.calls != nil {
		ca, cb := x.calls, y.calls
		p.Input = diffMessages(ca.Input, cb.Input, full)
		if changed(p.Input) {
			add(Difference{Field: FieldInputMessages, Summary: "input messages differ (" + countOps(p.Input) + ")"})
		} else if !full {
			p.Input = nil
		}
		if canonical(ca.SystemInstructions) != canonical(cb.SystemInstructions) {
			add(Difference{Field: FieldSystemInstructions, Summary: "system instructions differ"})
		}
		if canonical(ca.ToolDefinitions) != canonical(cb.ToolDefinitions) {
			add(Difference{Field: FieldToolDefinitions, Summary: "tool definitions differ"})
		}
		compareRequests(a.Request, b.Request, a.Model, b.Model, add)
		callsA, callsB := toolCalls(ca.Output), toolCalls(cb.Output)
		namesA, namesB := callNames(callsA), callNames(callsB)
		if namesA != namesB {
			add(Difference{Field: FieldToolChosen, Summary: fmt.Sprintf("tool calls %s -> %s", orNone(namesA), orNone(namesB)), A: namesA, B: namesB})
		} else {
			for i := range callsA {
				jsonDiff(fmt.Sprintf("[%d].arguments", i), callsA[i].Arguments, callsB[i].Arguments, &p.Arguments)
			}
			if len(p.Arguments) > 0 {
				add(Difference{Field: FieldToolArguments, Summary: "tool call arguments differ at " + paths(p.Arguments)})
			}
		}
		p.Output = diffMessages(ca.Output, cb.Output, full)
		if textChanged(ca.Output, cb.Output) {
			add(Difference{Field: FieldOutput, Summary: "output differs (" + countOps(p.Output) + ")"})
		}
		if !changed(p.Output) && !full {
			p.Output = nil
		}
	} else {
		if (x.args.set || y.args.set) && !sameText(x.args, y.args) {
			jsonDiff("", x.args.get(), y.args.get(), &p.Arguments)
			if len(p.Arguments) > 0 {
				add(Difference{Field: FieldToolArguments, Summary: "tool arguments differ at " + paths(p.Arguments)})
			}
		}
		if (x.result.set || y.result.set) && !sameText(x.result, y.result) {
			jsonDiff("", x.result.get(), y.result.get(), &p.Result)
			if len(p.Result) > 0 {
				add(Difference{Field: FieldToolResult, Summary: "tool result differs at " + paths(p.Result)})
			}
		}
	}
	if fa, fb := strings.Join(a.FinishReasons, ","), strings.Join(b.FinishReasons, ","); fa != fb {
		add(Difference{Field: FieldFinishReason, Summary: fmt.Sprintf("finish reason %s -> %s", orNone(fa), orNone(fb)), A: fa, B: fb})
	}
	if a.Error != b.Error || (a.Status == "error") != (b.Status == "error") {
		add(Difference{Field: FieldError, Summary: fmt.Sprintf("error %s -> %s", orNone(a.Error), orNone(b.Error)), A: a.Error, B: b.Error})
	}
	if a.Model != b.Model {
		add(Difference{Field: FieldModel, Summary: fmt.Sprintf("model %s -> %s", orNone(a.Model), orNone(b.Model)), A: a.Model, B: b.Model})
	}
	sort.SliceStable(diffs, func(i, j int) bool { return fieldRank(diffs[i].Field) < fieldRank(diffs[j].Field) })
	p.Differences = diffs
	p.Op = OpSame
	if len(diffs) > 0 {
		p.Op = OpChanged
	}
	return p
}

func fieldRank(f string) int {
	for i, x := range fieldOrder {
		if x == f {
			return i
		}
	}
	return len(fieldOrder)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func paths(cs []JSONChange) string {
	var ps []string
	for i, c := range cs {
		if i == 3 {
			ps = append(ps, fmt.Sprintf("and %d more", len(cs)-3))
			break
		}
		p := c.Path
		if p == "" {
			p = "(root)"
		}
		ps = append(ps, p)
	}
	return strings.Join(ps, ", ")
}

func changed(ms []MessageDiff) bool {
	for _, m := range ms {
		if m.Op != "same" {
			return true
		}
	}
	return false
}

func countOps(ms []MessageDiff) string {
	n := map[string]int{}
	for _, m := range ms {
		n[m.Op]++
	}
	var out []string
	for _, op := range []string{"changed", "removed", "added"} {
		if n[op] > 0 {
			out = append(out, fmt.Sprintf("%d %s", n[op], op))
		}
	}
	return strings.Join(out, ", ")
}

// toolCalls lists the tool_call parts of messages in order.
func toolCalls(ms []Message) []Part {
	var out []Part
	for _, m := range ms {
		for _, p := range m.Parts {
			if p.Type == "tool_call" {
				out = append(out, p)
			}
		}
	}
	return out
}

func callNames(ps []Part) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ",")
}

// textChanged compares the output messages without their tool calls (those are compared as
// tool_chosen and tool_arguments).
func textChanged(a, b []Message) bool {
	strip := func(ms []Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Role)
			for _, p := range m.Parts {
				if p.Type != "tool_call" {
					s = append(s, renderPart(p))
				}
			}
		}
		return strings.Join(s, "\x00")
	}
	return strip(a) != strip(b)
}

// renderMessage is the text of a message as compared and shown: its parts one after another;
// tool call ids are left out (providers generate them per call, so they differ between any two
// runs).
func renderMessage(m Message) string {
	var lines []string
	for _, p := range m.Parts {
		lines = append(lines, renderPart(p))
	}
	if m.FinishReason != "" {
		lines = append(lines, "[finish_reason] "+m.FinishReason)
	}
	return strings.Join(lines, "\n")
}

func renderPart(p Part) string {
	switch p.Type {
	case "text":
		return p.Content
	case "tool_call":
		return "[tool_call] " + p.Name + "(" + valueText(p.Arguments) + ")"
	case "tool_call_response":
		return "[tool_call_response] " + valueText(p.Response)
	default:
		if p.Content != "" {
			return "[" + p.Type + "] " + p.Content
		}
		q := p
		q.ID = ""
		return "[" + p.Type + "] " + canonical(q)
	}
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	return canonical(v)
}

// diffMessages aligns two message lists (Myers on role + rendered text; unmatched runs paired by
// position as changed messages) and diffs the text of changed ones line by line.
func diffMessages(a, b []Message, full bool) []MessageDiff {
	ka := make([]string, len(a))
	ra := make([]string, len(a))
	for i, m := range a {
		ra[i] = renderMessage(m)
		ka[i] = m.Role + "\x00" + ra[i]
	}
	kb := make([]string, len(b))
	rb := make([]string, len(b))
	for i, m := range b {
		rb[i] = renderMessage(m)
		kb[i] = m.Role + "\x00" + rb[i]
	}
	var out []MessageDiff
	for _, o := range align(ka, kb, nil, nil) {
		switch {
		case o.a >= 0 && o.b >= 0 && ka[o.a] == kb[o.b]:
			d := MessageDiff{Op: "same", A: o.a + 1, B: o.b + 1, Role: a[o.a].Role}
			if full {
				d.Text = linesOf(" ", ra[o.a])
			}
			out = append(out, d)
		case o.a >= 0 && o.b >= 0:
			role := a[o.a].Role
			if role != b[o.b].Role {
				role = a[o.a].Role + " -> " + b[o.b].Role
			}
			out = append(out, MessageDiff{Op: "changed", A: o.a + 1, B: o.b + 1, Role: role, Text: lineDiff(ra[o.a], rb[o.b])})
		case o.a >= 0:
			out = append(out, MessageDiff{Op: "removed", A: o.a + 1, Role: a[o.a].Role, Text: linesOf("-", ra[o.a])})
		default:
			out = append(out, MessageDiff{Op: "added", B: o.b + 1, Role: b[o.b].Role, Text: linesOf("+", rb[o.b])})
		}
	}
	return out
}

func linesOf(op, s string) []TextLine {
	var out []TextLine
	for _, l := range splitLines(s) {
		out = append(out, TextLine{Op: op, Text: l})
	}
	return out
}

// jsonDiff appends the differences between JSON values a and b under path: objects key by key
// (sorted), arrays element by element, anything else by value.
func jsonDiff(path string, a, b any, out *[]JSONChange) {
	switch va := a.(type) {
	case map[string]any:
		if vb, ok := b.(map[string]any); ok {
			ks := map[string]bool{}
			for k := range va {
				ks[k] = true
			}
			for k := range vb {
				ks[k] = true
			}
			sorted := make([]string, 0, len(ks))
			for k := range ks {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				x, okA := va[k]
				y, okB := vb[k]
				p := joinKey(path, k)
				switch {
				case !okA:
					*out = append(*out, JSONChange{Path: p, Op: "added", B: y})
				case !okB:
					*out = append(*out, JSONChange{Path: p, Op: "removed", A: x})
				default:
					jsonDiff(p, x, y, out)
				}
			}
			return
		}
	case []any:
		if vb, ok := b.([]any); ok {
			for i := 0; i < max(len(va), len(vb)); i++ {
				p := path + "[" + strconv.Itoa(i) + "]"
				switch {
				case i >= len(va):
					*out = append(*out, JSONChange{Path: p, Op: "added", B: vb[i]})
				case i >= len(vb):
					*out = append(*out, JSONChange{Path: p, Op: "removed", A: va[i]})
				default:
					jsonDiff(p, va[i], vb[i], out)
				}
			}
			return
		}
	}
	if canonical(a) != canonical(b) {
		*out = append(*out, JSONChange{Path: path, Op: "changed", A: a, B: b})
	}
}

func joinKey(path, k string) string {
	if strings.ContainsAny(k, ".[]\"") || k == "" {
		k = strconv.Quote(k)
		if path == "" {
			return "[" + k + "]"
		}
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}
