// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/store"
)

// groupOrphans counts the run's root spans and orphans (spans whose parent is not in the run)
// and moves the orphan subtrees of one missing parent together, one level deeper, at the place
// of the first of them: views hang them under a placeholder for that parent. missing maps the
// first orphan of each missing parent to that parent's id.
func groupOrphans(flat []*store.Node) (out []*store.Node, missing map[*store.Node]string, roots, orphans int64) {
	ids := make(map[pcommon.SpanID]bool, len(flat))
	for _, n := range flat {
		ids[n.Span.SpanID()] = true
	}
	type subtree struct {
		nodes  []*store.Node
		parent string // missing parent's id; "" for a true root
	}
	var subs []subtree
	for _, n := range flat {
		pid := n.Span.ParentSpanID()
		switch {
		case pid.IsEmpty():
			roots++
		case !ids[pid]:
			orphans++
		}
		if n.Depth == 0 || len(subs) == 0 {
			p := ""
			if !pid.IsEmpty() && !ids[pid] {
				p = pid.String()
			}
			subs = append(subs, subtree{parent: p})
		}
		subs[len(subs)-1].nodes = append(subs[len(subs)-1].nodes, n)
	}
	if orphans == 0 {
		return flat, nil, roots, 0
	}
	missing = map[*store.Node]string{}
	done := map[string]bool{}
	for _, st := range subs {
		if st.parent == "" {
			out = append(out, st.nodes...)
			continue
		}
		if done[st.parent] {
			continue
		}
		done[st.parent] = true
		for _, o := range subs {
			if o.parent != st.parent {
				continue
			}
			missing[o.nodes[0]] = o.parent
			for _, n := range o.nodes {
				n.Depth++
				out = append(out, n)
			}
		}
	}
	return out, missing, roots, orphans
}
