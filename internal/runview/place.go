// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
)

// Placement says why a node sits where it does in View.Nodes.
type Placement string

// Placements. A recorded exchange that is not a descendant of the LLM or tool call that made it
// is moved under that call (with its own subtree), as the exchanges recorded below their call
// are, so that every view shows an exchange beside the call's request and response:
//   - PlacedByLink: the exchange carries a span link marked inferred (runagainattr.LinkInferred,
//     written by `proxy --record` when it joins an agent's own trace) to an LLM or tool span of
//     the run;
//   - PlacedByTime: the counting rule found the instrumented call covering it by time, request
//     model or tool name (rule.Verdict.CoveredBy, docs/architecture.md "One read model").
//
// The recorded parent stays on the span (ParentSpanID) and in Node.RecordedParent.
const (
	PlacedAsRecorded Placement = ""
	PlacedByLink     Placement = "inferred_link"
	PlacedByTime     Placement = "time"
)

// isExchange reports whether n is a recorded exchange (HTTP, or MCP over stdio).
func isExchange(n *Node) bool { return fixture.IsFixture(n.Span) || fixture.IsMCPExchange(n.Span) }

// isCall reports whether n is an LLM or tool call an exchange can belong to.
func isCall(n *Node) bool {
	return !isExchange(n) && (n.Kind == genai.KindLLM || n.Kind == genai.KindTool || n.Verdict.Step == rule.StepTool)
}

// inferredLink returns the span id an inferred span link of n points at (empty when none).
func inferredLink(n *Node) pcommon.SpanID {
	ls := n.Span.Links()
	for k := 0; k < ls.Len(); k++ {
		l := ls.At(k)
		if t, ok := l.Attributes().Get(runagainattr.LinkType); ok && t.AsString() == runagainattr.LinkInferred {
			return l.SpanID()
		}
	}
	return pcommon.SpanID{}
}

// place moves each exchange that is not below the call that made it under that call (Placement),
// after count: indexes in verdicts, steps and byID are renumbered; steps stay in run order.
func (v *View) place() {
	type move struct{ node, owner int }
	var moves []move
	for j, n := range v.Nodes {
		if !isExchange(n) {
			continue
		}
		owner, how := -1, PlacedAsRecorded
		if id := inferredLink(n); !id.IsEmpty() {
			if o, ok := v.byID[id]; ok && o != j && isCall(v.Nodes[o]) {
				owner, how = o, PlacedByLink
			}
		}
		if owner < 0 && n.Verdict.CoveredBy >= 0 {
			owner, how = n.Verdict.CoveredBy, PlacedByTime
		}
		if owner < 0 || v.ancestorOf(owner, j) || v.ancestorOf(j, owner) {
			continue // already below its call (or the call is below it: left as recorded)
		}
		n.Placement = how
		moves = append(moves, move{j, owner})
	}
	if len(moves) == 0 {
		return
	}
	// order holds the nodes (by their current index) in the new order; depth and parent are
	// updated on the nodes as subtrees move.
	order := make([]int, len(v.Nodes))
	for i := range order {
		order[i] = i
	}
	pos := func(x int) int {
		for k, o := range order {
			if o == x {
				return k
			}
		}
		return -1
	}
	for _, m := range moves {
		if v.ancestorOf(m.node, m.owner) {
			continue // an earlier move put the call below this exchange
		}
		// Cut the exchange's subtree out of the order.
		at := pos(m.node)
		end := at + 1
		d0 := v.Nodes[m.node].Depth
		for end < len(order) && v.Nodes[order[end]].Depth > d0 {
			end++
		}
		sub := append([]int(nil), order[at:end]...)
		order = append(order[:at], order[end:]...)
		// Insert it among the call's children by start time.
		o := pos(m.owner)
		od := v.Nodes[m.owner].Depth
		ins := o + 1
		start := v.Nodes[m.node].Span.StartTimestamp()
		for ins < len(order) && v.Nodes[order[ins]].Depth > od {
			c := v.Nodes[order[ins]]
			if c.Depth == od+1 && c.Span.StartTimestamp() > start {
				break
			}
			ins++
		}
		delta := od + 1 - d0
		for _, x := range sub {
			v.Nodes[x].Depth += delta
		}
		v.Nodes[m.node].Parent = m.owner
		order = append(order[:ins], append(sub, order[ins:]...)...)
	}
	// Renumber.
	newIdx := make([]int, len(order))
	nodes := make([]*Node, len(order))
	for k, x := range order {
		newIdx[x] = k
		nodes[k] = v.Nodes[x]
	}
	re := func(i int) int {
		if i < 0 {
			return i
		}
		return newIdx[i]
	}
	resolved := make(map[int]bool, len(v.resolved))
	for i, ok := range v.resolved {
		resolved[newIdx[i]] = ok
	}
	v.resolved = resolved
	for k, n := range nodes {
		n.Index = k
		n.Parent = re(n.Parent)
		n.RecordedParent = re(n.RecordedParent)
		n.Verdict.CoveredBy = re(n.Verdict.CoveredBy)
		v.byID[n.Span.SpanID()] = k
	}
	v.Nodes = nodes
	for _, st := range v.Steps {
		st.Node = newIdx[st.Node]
	}
	sort.SliceStable(v.Steps, func(a, b int) bool { return v.Steps[a].Node < v.Steps[b].Node })
	llm, tool := 0, 0
	for k, st := range v.Steps {
		st.Index = k + 1
		if st.LLMStep > 0 {
			llm++
			st.LLMStep = llm
		}
		if st.ToolStep > 0 {
			tool++
			st.ToolStep = tool
		}
	}
}

// ancestorOf reports whether node a is an ancestor of node d (by Parent).
func (v *View) ancestorOf(a, d int) bool {
	for p, n := v.Nodes[d].Parent, 0; p >= 0 && n <= len(v.Nodes); p, n = v.Nodes[p].Parent, n+1 {
		if p == a {
			return true
		}
	}
	return false
}
