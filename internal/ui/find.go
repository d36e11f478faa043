// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runview/rule"
)

// Filter kinds of the run page's chips and jump keys (/api/runs/{trace}/find?kind=...).
const (
	findError      = "error"      // spans with status ERROR
	findLLM        = "llm"        // LLM calls, as the read model counts them (a row with an LLM step)
	findTool       = "tool"       // tool calls
	findHTTP       = "http"       // recorded HTTP and MCP exchanges (fixtures) and HTTP client spans
	findAlert      = "alert"      // spans an agent_guard alert points at
	findDivergence = "divergence" // spans a replay divergence points at
)

var findKinds = []string{findError, findLLM, findTool, findAlert, findDivergence, findHTTP}

// matchesKind reports whether row i is of filter kind k.
func (c *cachedRun) matchesKind(i int, k string) bool {
	r := c.rows[i]
	switch k {
	case findError:
		return r.Error
	case findLLM:
		// The counting rule's LLM calls (runview: Row.Step), as the header, `runagain show`
		// and sessions count them: an agent or workflow span that carries GenAI attributes
		// too, or an exchange under a call, is classified as one but not counted again.
		return r.Step > 0
	case findTool:
		// The rule's tool steps, as the header counts them: an instrumented tool span, or an MCP
		// tools/call exchange that no instrumented span covers.
		n := c.nodes[i]
		return n.Step != nil && n.Step.Kind == rule.StepTool
	case findHTTP:
		return r.Kind == kindHTTP || r.Kind == kindMCP
	case findAlert, findDivergence:
		for _, m := range r.Marks {
			if c.marks[m].Kind == k {
				return true
			}
		}
	}
	return false
}

// kindCounts counts the rows of each filter kind (the chips' numbers).
func (c *cachedRun) kindCounts() map[string]int {
	out := map[string]int{}
	for i := range c.rows {
		for _, k := range findKinds {
			if c.matchesKind(i, k) {
				out[k]++
			}
		}
	}
	return out
}

// firstOf is the span id of the first row of kind k, "" when none.
func (c *cachedRun) firstOf(k string) string {
	for i := range c.rows {
		if c.matchesKind(i, k) {
			return c.rows[i].SpanID
		}
	}
	return ""
}

// countChildren sets each row's number of direct children.
func countChildren(rows []Row) {
	for _, r := range rows {
		if r.Parent >= 0 && r.Parent < len(rows) {
			rows[r.Parent].Children++
		}
	}
}

// findResult is the answer of /api/runs/{trace}/find: the rows that match, in run order.
type findResult struct {
	Query string   `json:"q"`
	Kinds []string `json:"kinds"`
	Rows  []int    `json:"rows"`
	IDs   []string `json:"ids"`
	Total int      `json:"total"`
	Error string   `json:"error,omitempty"` // payloads that could not be fetched (searched as references)
}

// maxQuery bounds a search text (bytes).
const maxQuery = 1 << 10

// findAPI answers the rows of a run that match every given filter kind (?kind=error,llm: any
// of them) and contain the text ?q= (case-insensitive) in the span's name, an attribute key or
// value, an event's name or attribute values, or a log record's body or attributes pointing at
// it; payloads are fetched first (offloaded values are searched, not their references).
func (s *Server) findAPI(w http.ResponseWriter, r *http.Request) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	q := r.URL.Query()
	res := findResult{Query: q.Get("q"), Rows: []int{}, IDs: []string{}, Total: len(c.rows)}
	if len(res.Query) > maxQuery {
		s.failPage(w, r, badRequest("search text of %d bytes: at most %d", len(res.Query), maxQuery))
		return
	}
	if ks := q.Get("kind"); ks != "" {
		for _, k := range strings.Split(ks, ",") {
			known := false
			for _, fk := range findKinds {
				known = known || k == fk
			}
			if !known {
				s.failPage(w, r, badRequest("kind %q: want one of %s", k, strings.Join(findKinds, ", ")))
				return
			}
			res.Kinds = append(res.Kinds, k)
		}
	}
	needle := strings.ToLower(res.Query)
	var perr error
	for i := range c.rows {
		if len(res.Kinds) > 0 {
			any := false
			for _, k := range res.Kinds {
				any = any || c.matchesKind(i, k)
			}
			if !any {
				continue
			}
		}
		if needle != "" {
			sp, logs, err := s.span(r.Context(), c, i)
			if err != nil && perr == nil {
				perr = err
			}
			if !spanContains(sp, logs, needle) {
				continue
			}
		}
		res.Rows = append(res.Rows, i)
		res.IDs = append(res.IDs, c.rows[i].SpanID)
	}
	if perr != nil {
		res.Error = perr.Error()
	}
	writeJSON(w, res)
}

// spanContains reports whether needle (lower case) is in the span's name, attributes, events or
// log records.
func spanContains(sp ptrace.Span, logs []plog.LogRecord, needle string) bool {
	if contains(sp.Name(), needle) || mapContains(sp.Attributes(), needle) {
		return true
	}
	for j := 0; j < sp.Events().Len(); j++ {
		ev := sp.Events().At(j)
		if contains(ev.Name(), needle) || mapContains(ev.Attributes(), needle) {
			return true
		}
	}
	if contains(sp.Status().Message(), needle) {
		return true
	}
	for _, lr := range logs {
		if contains(lr.Body().AsString(), needle) || mapContains(lr.Attributes(), needle) {
			return true
		}
	}
	return false
}

func mapContains(m pcommon.Map, needle string) bool {
	found := false
	m.Range(func(k string, v pcommon.Value) bool {
		found = contains(k, needle) || contains(v.AsString(), needle)
		return !found
	})
	return found
}

// contains is a case-insensitive substring test of needle (lower case) in s. An ASCII needle
// is matched without allocating (ASCII letters fold only with ASCII letters: strings.EqualFold
// at each candidate byte); another needle is compared with s lower-cased.
func contains(s, needle string) bool {
	if len(s) < len(needle) {
		return false
	}
	if strings.Contains(s, needle) {
		return true
	}
	if needle == "" || !isASCII(needle) {
		return strings.Contains(strings.ToLower(s), needle)
	}
	lo, hi := needle[0], needle[0]
	if 'a' <= lo && lo <= 'z' {
		hi = lo - 'a' + 'A'
	}
	// i and j: the next offsets of the first byte's two cases at or after from (-1: none left).
	next := func(c byte, from int) int {
		if k := strings.IndexByte(s[from:], c); k >= 0 {
			return from + k
		}
		return -1
	}
	i, j := next(lo, 0), -1
	if hi != lo {
		j = next(hi, 0)
	}
	for i >= 0 || j >= 0 {
		k := i
		if k < 0 || (j >= 0 && j < k) {
			k = j
		}
		if k+len(needle) > len(s) {
			return false
		}
		if strings.EqualFold(s[k:k+len(needle)], needle) {
			return true
		}
		if k == i {
			i = next(lo, k+1)
		} else {
			j = next(hi, k+1)
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// treeAPI serves the run's shape for folding: each row's parent index (-1 for a root) and depth.
func (s *Server) treeAPI(w http.ResponseWriter, r *http.Request) {
	c, err := s.loadRun(r.Context(), r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	parents, depths := make([]int, len(c.rows)), make([]int, len(c.rows))
	for i, row := range c.rows {
		parents[i], depths[i] = row.Parent, row.Depth
	}
	writeJSON(w, map[string]any{"p": parents, "d": depths})
}
