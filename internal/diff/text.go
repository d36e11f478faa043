// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/termsafe"
)

// ANSI colours of the human output (only when the caller says the output is a terminal).
const (
	cRed   = "\x1b[31m"
	cGreen = "\x1b[32m"
	cCyan  = "\x1b[36m"
	cBold  = "\x1b[1m"
	cReset = "\x1b[0m"
)

// WriteText writes r as a unified-diff-style report a person reads in a terminal: a header
// naming the runs, the first difference, one hunk per step ("=" same, "~" changed, "-" only in
// A, "+" only in B) with message and JSON differences inside changed steps, then the totals.
// color adds ANSI colours (red for A, green for B).
func WriteText(w io.Writer, r *Result, color bool) error {
	p := &printer{w: w, color: color}
	p.line(cBold, "--- a %s  (%s)", r.A.TraceID, countOf(r.A.Steps, "step"))
	p.line(cBold, "+++ b %s  (%s)", r.B.TraceID, countOf(r.B.Steps, "step"))
	if r.Step > 0 {
		p.line("", "comparing LLM call %d of each run: what the model saw and what it answered", r.Step)
	}
	if r.Changes != nil {
		p.line(cBold, "%s", ChangesLine(r))
	}
	for _, n := range r.Notes {
		p.line(cBold, "note: %s", n)
	}
	if r.Identical {
		p.line(cBold, "no difference: %d aligned steps, same inputs, outputs, tool calls and results", len(r.Pairs))
	} else {
		p.line(cBold, "first difference: %s", r.First.Text)
	}
	for _, pr := range r.Pairs {
		p.pair(pr, r.Step > 0)
	}
	t := r.Totals
	p.line(cCyan, "@@ totals (a -> b, delta) @@")
	p.line("", "  steps          %s", ints(t.Steps))
	p.line("", "  llm calls      %s", ints(t.LLMCalls))
	p.line("", "  tool calls     %s", ints(t.ToolCalls))
	if t.HTTPCalls.A > 0 || t.HTTPCalls.B > 0 {
		p.line("", "  http calls     %s", ints(t.HTTPCalls))
	}
	p.line("", "  input tokens   %s", ints(t.InputTokens))
	p.line("", "  output tokens  %s", ints(t.OutputTokens))
	p.line("", "  cost           %s", usds(t.CostUSD))
	if t.Unpriced.A > 0 || t.Unpriced.B > 0 {
		p.line("", "  unpriced calls %s  (models without a known price: not in the cost)", ints(t.Unpriced))
	}
	p.line("", "  duration ms    %s", floats(t.DurationMS, "%.1f"))
	p.line("", "  errors         %s", ints(t.Errors))
	p.line("", "  alerts         %s", ints(t.Alerts))
	return p.err
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

func (p *printer) line(c, format string, args ...any) {
	if p.err != nil {
		return
	}
	// Every value printed is recorded agent text: escape what could drive the terminal before
	// adding our own colour (internal/termsafe).
	s := termsafe.String(fmt.Sprintf(format, args...))
	if p.color && c != "" {
		s = c + s + cReset
	}
	_, p.err = fmt.Fprintln(p.w, s)
}

func (p *printer) raw(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

// inlineDiff marks the changed parts of two versions of a line with reverse video
// (diffmatchpatch character diff, cleaned up to word-like boundaries).
func inlineDiff(a, b string) (string, string) {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	ds := dmp.DiffCleanupSemantic(dmp.DiffMain(a, b, false))
	const rev, unrev = "\x1b[7m", "\x1b[27m"
	var x, y strings.Builder
	for _, d := range ds {
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			x.WriteString(termsafe.String(d.Text))
			y.WriteString(termsafe.String(d.Text))
		case diffmatchpatch.DiffDelete:
			x.WriteString(rev + termsafe.String(d.Text) + unrev)
		case diffmatchpatch.DiffInsert:
			y.WriteString(rev + termsafe.String(d.Text) + unrev)
		}
	}
	return x.String(), y.String()
}

func opColor(op string) string {
	switch op {
	case "-":
		return cRed
	case "+":
		return cGreen
	}
	return ""
}

func (p *printer) pair(pr Pair, full bool) {
	switch pr.Op {
	case OpSame:
		if full {
			p.line(cCyan, "@@ a step %d / b step %d: %s @@", pr.A.Index, pr.B.Index, describe(pr.A))
		} else {
			p.line("", "= step %d/%d  %s", pr.A.Index, pr.B.Index, describe(pr.A))
		}
	case OpOnlyA:
		p.line(cRed, "- step %d/-  %s  (only in a)", pr.A.Index, describe(pr.A))
		return
	case OpOnlyB:
		p.line(cGreen, "+ step -/%d  %s  (only in b)", pr.B.Index, describe(pr.B))
		return
	case OpChanged:
		label := describe(pr.A)
		if db := describe(pr.B); db != label {
			label += " -> " + db
		}
		p.line(cCyan, "@@ ~ step %d/%d  %s @@", pr.A.Index, pr.B.Index, label)
	}
	for _, d := range pr.Differences {
		p.line("", "  %s: %s", d.Field, d.Summary)
	}
	if pr.A.Kind == KindLLM && pr.B.Kind == KindLLM && requestsDiffer(pr.A.Request, pr.B.Request) {
		p.line(cRed, "  request a: %s", orNone(FormatRequest(pr.A.Request)))
		p.line(cGreen, "  request b: %s", orNone(FormatRequest(pr.B.Request)))
	}
	for i, st := range []*Step{pr.A, pr.B} {
		if st != nil && st.MessagesError != "" {
			p.line(cBold, "  messages of %s could not all be read: %s", []string{"a", "b"}[i], st.MessagesError)
		}
	}
	p.messages("input messages", pr.Input)
	p.messages("output messages", pr.Output)
	p.changes("arguments", pr.Arguments)
	p.changes("result", pr.Result)
	if m := pr.Metrics; m != nil && pr.Op != OpSame {
		if pr.A.Kind == KindLLM || pr.B.Kind == KindLLM {
			p.line("", "  tokens in %s, out %s; cost %s; latency ms %s; status %s -> %s",
				ints(m.InputTokens), ints(m.OutputTokens), usds(m.CostUSD), floats(m.DurationMS, "%.1f"), m.StatusA, m.StatusB)
		} else {
			p.line("", "  latency ms %s; status %s -> %s", floats(m.DurationMS, "%.1f"), m.StatusA, m.StatusB)
		}
	}
}

func (p *printer) messages(title string, ms []MessageDiff) {
	if len(ms) == 0 {
		return
	}
	p.line("", "  %s:", title)
	for k := 0; k < len(ms); k++ {
		m := ms[k]
		// Three or more unchanged messages in a row (a growing history) are one line.
		if m.Op == "same" && len(m.Text) == 0 {
			j := k
			for j+1 < len(ms) && ms[j+1].Op == "same" && len(ms[j+1].Text) == 0 {
				j++
			}
			if j-k >= 2 {
				p.line("", "    a[%d..%d] = b[%d..%d] (%d messages unchanged)", m.A, ms[j].A, m.B, ms[j].B, j-k+1)
				k = j
				continue
			}
		}
		var where string
		switch m.Op {
		case "same":
			where = fmt.Sprintf("a[%d] = b[%d]", m.A, m.B)
		case "changed":
			where = fmt.Sprintf("a[%d] ~ b[%d]", m.A, m.B)
		case "removed":
			where = fmt.Sprintf("a[%d] removed", m.A)
		case "added":
			where = fmt.Sprintf("b[%d] added", m.B)
		}
		p.line("", "    %s %s", where, m.Role)
		for i := 0; i < len(m.Text); i++ {
			l := m.Text[i]
			// On a terminal, a line replaced by one line also shows which words changed.
			if p.color && l.Op == "-" && i+1 < len(m.Text) && m.Text[i+1].Op == "+" &&
				(i == 0 || m.Text[i-1].Op != "-") && (i+2 >= len(m.Text) || m.Text[i+2].Op != "+") {
				a, b := inlineDiff(l.Text, m.Text[i+1].Text)
				p.raw(cRed + "    - " + a + cReset)
				p.raw(cGreen + "    + " + b + cReset)
				i++
				continue
			}
			p.line(opColor(l.Op), "    %s %s", l.Op, l.Text)
		}
	}
}

func (p *printer) changes(title string, cs []JSONChange) {
	if len(cs) == 0 {
		return
	}
	p.line("", "  %s:", title)
	for _, c := range cs {
		path := c.Path
		if path == "" {
			path = "(root)"
		}
		switch c.Op {
		case "removed":
			p.line(cRed, "    - %s: %s", path, short(c.A))
		case "added":
			p.line(cGreen, "    + %s: %s", path, short(c.B))
		default:
			p.line(cRed, "    - %s: %s", path, short(c.A))
			p.line(cGreen, "    + %s: %s", path, short(c.B))
		}
	}
}

// short renders a JSON value on one line (strings without quotes), at most 200 characters.
func short(v any) string {
	s := valueText(v)
	s = strings.ReplaceAll(s, "\n", `\n`)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "..."
	}
	return s
}

func ints(d IntDelta) string { return fmt.Sprintf("%d -> %d (%+d)", d.A, d.B, d.Delta) }

func floats(d FloatDelta, f string) string {
	return fmt.Sprintf(f+" -> "+f+" (%s)", d.A, d.B, signed(d.Delta, f))
}

// usds is a cost delta in the form every view prints costs (pricing.FormatUSD), so the same cost
// reads the same in diff, show, sessions and the UI.
func usds(d FloatDelta) string {
	sign := "+"
	if d.Delta < 0 {
		sign = "-"
	}
	return pricing.FormatUSD(d.A, 0, true) + " -> " + pricing.FormatUSD(d.B, 0, true) + " (" + sign + pricing.FormatUSD(math.Abs(d.Delta), 0, true) + ")"
}

func signed(x float64, f string) string {
	if x >= 0 {
		return "+" + fmt.Sprintf(f, x)
	}
	return fmt.Sprintf(f, x)
}

// countOf is "1 step", "3 steps".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
