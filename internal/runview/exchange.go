// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview/rule"
)

// HTTPExchange is one recorded HTTP exchange (a proxy or cassette fixture: internal/fixture) as
// the views show it: the request (method, URL, headers, body) and the response (status, headers,
// body and, for a text/event-stream response, its server-sent events one by one). Bodies are the
// recorded bytes as a string (encoding/json writes invalid UTF-8 as U+FFFD; the terminal and
// the pages escape control characters). Headers are as recorded: credentials redacted by the
// recorder, names in lower case, sorted by name.
type HTTPExchange struct {
	Node            int      `json:"-"` // index of the exchange's node in View.Nodes
	SpanID          string   `json:"span_id"`
	Method          string   `json:"method"`
	URL             string   `json:"url"`
	Protocol        string   `json:"protocol,omitempty"`
	RequestHeaders  []Header `json:"request_headers"`
	RequestBody     string   `json:"request_body"`
	Status          int      `json:"status"` // 0: no response (Error says why)
	ResponseHeaders []Header `json:"response_headers"`
	ResponseBody    string   `json:"response_body"`
	// Events are the SSE events of a text/event-stream response in order (the recorded
	// http.response.chunk events, else the body split at blank lines); nil otherwise.
	Events   []SSEEvent    `json:"sse_events,omitempty"`
	Error    string        `json:"error,omitempty"`     // transport error, or the upstream broke off the body
	CutShort bool          `json:"cut_short,omitempty"` // the client closed the body early: the body is what it read
	Duration time.Duration `json:"duration_ns"`
	Source   string        `json:"source,omitempty"` // runagain.fixture.source: proxy, vcrpy, har, ...
	// ReadErr says why the span's exchange could not be read (fixture.FromSpan); the other
	// fields are then empty.
	ReadErr string `json:"read_error,omitempty"`
}

// Header is one header with its values in recorded order.
type Header struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// SSEEvent is one server-sent event of a streamed response: Data is the event's bytes
// (Offset and Size into the response body, its "data:" lines and the blank line ending it); At is
// when its last byte arrived, from the exchange's start (0 when not recorded).
type SSEEvent struct {
	Index  int           `json:"index"`
	Offset int           `json:"offset"`
	Size   int           `json:"size"`
	At     time.Duration `json:"at_ns"`
	Data   string        `json:"data"`
}

// ExchangesOf returns the recorded HTTP exchanges node i made, in run order: the node itself
// when it is an exchange; else the exchanges below it (descendants whose nearest LLM or tool
// ancestor is node i: a nested call's exchanges are that call's) and the derived exchanges
// the counting rule says it covers (rule.Verdict.CoveredBy: an overlapping call of the same
// request that is not its descendant). Each is read from its span as it is now: a view built with
// LazyPayloads must Rehydrate the exchange nodes (ExchangeNodes) first, or bodies stay references.
func (v *View) ExchangesOf(i int) []*HTTPExchange {
	var out []*HTTPExchange
	for _, j := range v.ExchangeNodes(i) {
		if fixture.IsFixture(v.Nodes[j].Span) {
			out = append(out, v.exchange(j))
		}
	}
	return out
}

// ExchangeNodes are the indexes of the nodes ExchangesOf(i) and MCPExchangesOf(i) read, in run
// order: recorded HTTP exchanges and MCP exchanges over stdio.
func (v *View) ExchangeNodes(i int) []int {
	if i < 0 || i >= len(v.Nodes) {
		return nil
	}
	if isExchange(v.Nodes[i]) {
		return []int{i}
	}
	v.ownersOnce()
	return v.owned[i]
}

// ownersOnce assigns each exchange to the LLM or tool call that made it (once per View).
func (v *View) ownersOnce() {
	if v.owned != nil {
		return
	}
	v.owned = map[int][]int{}
	for j, n := range v.Nodes {
		if !isExchange(n) {
			continue
		}
		owner := n.Verdict.CoveredBy
		for p := n.Parent; owner < 0 && p >= 0; p = v.Nodes[p].Parent {
			if k := v.Nodes[p].Kind; k == genai.KindLLM || k == genai.KindTool || v.Nodes[p].Verdict.Step == rule.StepTool {
				owner = p
			}
		}
		if owner >= 0 {
			v.owned[owner] = append(v.owned[owner], j)
		}
	}
}

// exchange reads node j's span as an HTTPExchange.
func (v *View) exchange(j int) *HTTPExchange {
	n := v.Nodes[j]
	hx := &HTTPExchange{Node: j, SpanID: n.SpanID()}
	ex, err := fixture.FromSpan(n.Span)
	if err != nil {
		hx.ReadErr = err.Error()
		return hx
	}
	hx.Method, hx.URL, hx.Protocol, hx.Status = ex.Method, ex.URL, ex.Protocol, ex.Status
	hx.RequestHeaders, hx.ResponseHeaders = headers(ex.RequestHeader), headers(ex.ResponseHeader)
	hx.RequestBody, hx.ResponseBody = string(ex.RequestBody), string(ex.ResponseBody)
	hx.Error, hx.CutShort, hx.Source = ex.Error, ex.CutShort, ex.Source
	if ex.End.After(ex.Start) {
		hx.Duration = ex.End.Sub(ex.Start)
	}
	chunks := ex.Chunks
	if chunks == nil && fixture.IsEventStream(ex.ResponseHeader.Get("Content-Type")) {
		chunks = fixture.SplitEvents(ex.ResponseBody)
	}
	for k, c := range chunks {
		if c.Offset < 0 || c.Size < 0 || c.Offset+c.Size > len(ex.ResponseBody) {
			continue // a chunk outside the body (a cut or edited recording): nothing to show
		}
		e := SSEEvent{Index: k, Offset: c.Offset, Size: c.Size, Data: string(ex.ResponseBody[c.Offset : c.Offset+c.Size])}
		if !c.Time.IsZero() && c.Time.After(ex.Start) {
			e.At = c.Time.Sub(ex.Start)
		}
		hx.Events = append(hx.Events, e)
	}
	return hx
}

func headers(h http.Header) []Header {
	out := make([]Header, 0, len(h))
	for k, vs := range h {
		out = append(out, Header{Name: strings.ToLower(k), Values: vs})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}
