// SPDX-License-Identifier: Apache-2.0

package store

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
)

// DefaultSequenceKeys are span attributes an SDK may set to give the order of steps in a run
// explicitly; when a span carries one it wins over the start time (docs/architecture.md "Order").
var DefaultSequenceKeys = []string{runagainattr.Sequence, "gen_ai.step.sequence"}

// Node is one span in an ordered run tree.
type Node struct {
	Span     ptrace.Span
	Resource pcommon.Resource
	Scope    pcommon.InstrumentationScope
	// ResourceSpans and ScopeSpans hold Span (for schema URLs and SpanTraces).
	ResourceSpans ptrace.ResourceSpans
	ScopeSpans    ptrace.ScopeSpans
	Children      []*Node
	Depth         int
}

// Order arranges the spans of td as a forest in the order docs/architecture.md specifies: siblings by the
// SDK sequence attribute where both carry one, else by start time, then end time (a span that
// ends first, of two that start in the same millisecond), then span id; a parent always
// before its children (depth-first). A span whose parent is not in td becomes a root.
// It returns the roots and the flattened pre-order list.
func Order(td ptrace.Traces, sequenceKeys []string) (roots []*Node, flat []*Node) {
	return OrderNodes(Nodes(td), sequenceKeys)
}

// Nodes are the spans of td as unlinked Nodes (Span, Resource, Scope, ResourceSpans and
// ScopeSpans set), in td's order, for OrderNodes.
func Nodes(td ptrace.Traces) []*Node {
	var all []*Node
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				all = append(all, &Node{Span: ss.Spans().At(k), Resource: rs.Resource(), Scope: ss.Scope(), ResourceSpans: rs, ScopeSpans: ss})
			}
		}
	}
	return all
}

// OrderNodes is Order over the unlinked nodes of one run (Nodes, or spans that belong to
// another pdata, e.g. a request being written, whose ResourceSpans and ScopeSpans may hold other
// spans): it sets their Children and Depth and returns the roots and the flattened pre-order
// list. The result does not depend on the order of all (siblings' order is total, ending
// with the span id), except that of two nodes with the same span id the later is the parent
// its children link to.
func OrderNodes(all []*Node, sequenceKeys []string) (roots []*Node, flat []*Node) {
	if sequenceKeys == nil {
		sequenceKeys = DefaultSequenceKeys
	}
	byID := make(map[pcommon.SpanID]*Node, len(all))
	for _, n := range all {
		byID[n.Span.SpanID()] = n
	}
	for _, n := range all {
		p, ok := byID[n.Span.ParentSpanID()]
		if ok && p != n && !n.Span.ParentSpanID().IsEmpty() && !isAncestor(n, p, byID) {
			p.Children = append(p.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	less := func(ns []*Node) func(i, j int) bool {
		return func(i, j int) bool {
			a, b := ns[i], ns[j]
			sa, oka := sequence(a.Span, sequenceKeys)
			sb, okb := sequence(b.Span, sequenceKeys)
			if oka && okb && sa != sb {
				return sa < sb
			}
			if a.Span.StartTimestamp() != b.Span.StartTimestamp() {
				return a.Span.StartTimestamp() < b.Span.StartTimestamp()
			}
			// The same start (an SDK stamping in milliseconds): the one that ended first, e.g. a
			// tool call before the LLM call that read its result.
			if ea, eb := SaneEnd(a.Span.StartTimestamp(), a.Span.EndTimestamp()), SaneEnd(b.Span.StartTimestamp(), b.Span.EndTimestamp()); ea != eb {
				return ea < eb
			}
			ai, bi := a.Span.SpanID(), b.Span.SpanID()
			return string(ai[:]) < string(bi[:])
		}
	}
	var walk func(ns []*Node, depth int)
	walk = func(ns []*Node, depth int) {
		sort.SliceStable(ns, less(ns))
		for _, n := range ns {
			n.Depth = depth
			flat = append(flat, n)
			walk(n.Children, depth+1)
		}
	}
	walk(roots, 0)
	return roots, flat
}

// isAncestor reports whether n is an ancestor of p (a cycle in parent links), so a malformed
// run with a parent loop still shows every span once.
func isAncestor(n, p *Node, byID map[pcommon.SpanID]*Node) bool {
	seen := 0
	for cur := p; cur != nil && seen <= len(byID); seen++ {
		if cur == n {
			return true
		}
		next, ok := byID[cur.Span.ParentSpanID()]
		if !ok || cur.Span.ParentSpanID().IsEmpty() {
			return false
		}
		cur = next
	}
	return seen > len(byID)
}

func sequence(s ptrace.Span, keys []string) (int64, bool) {
	for _, k := range keys {
		if v, ok := s.Attributes().Get(k); ok {
			switch v.Type() {
			case pcommon.ValueTypeInt:
				return v.Int(), true
			case pcommon.ValueTypeDouble:
				return int64(v.Double()), true
			}
		}
	}
	return 0, false
}

// SpanTraces returns a Traces holding one copy of span with its resource and scope (and their
// schema URLs): the unit the hot tier stores and `runagain show --json` prints.
func SpanTraces(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) ptrace.Traces {
	one := ptrace.NewTraces()
	ors := one.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(ors.Resource())
	ors.SetSchemaUrl(rs.SchemaUrl())
	oss := ors.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(oss.Scope())
	oss.SetSchemaUrl(ss.SchemaUrl())
	span.CopyTo(oss.Spans().AppendEmpty())
	return one
}
