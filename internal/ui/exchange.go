// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
)

// exchangeView is one recorded HTTP exchange on a span's panel: request (method, URL, headers,
// body) and response (status, headers, body, or its SSE events one by one), read through the
// read model (runview.ExchangesOf).
type exchangeView struct {
	*runview.HTTPExchange
	Own        bool // the panel's span is this exchange
	StatusText string
	Request    bodyView
	Response   bodyView
	Events     []sseView
	MoreEvents int // events past sseEventLimit, not listed
	Uncovered  int // response bytes in no listed-or-not event (a chunk list that does not cover the body)
	Row        int // the exchange's row on the timeline
}

// bodyView is a body cut at inlineLimit (the whole loads from Key), indented when JSON.
type bodyView struct {
	Key       string // the span attribute holding it (http.request.body, http.response.body)
	Text      string
	Pretty    string
	Size      int
	Truncated bool
}

// sseView is one server-sent event: Text is its recorded bytes (cut at inlineLimit), Fields
// what they say (event:, data:, id:, retry:, comments) and Pretty its data indented when JSON.
type sseView struct {
	runview.SSEEvent
	AtMS      float64
	Text      string
	Truncated bool
	Fields    fixture.EventFields
	Pretty    string
	DataText  string // Fields.Data cut at inlineLimit
}

// sseEventLimit is how many events a panel lists (a long stream has thousands); the rest are in
// the body, which copy and download give whole. ssePrettyLimit is how many have their JSON data
// indented (and so foldable): past it, data shows as recorded.
const (
	sseEventLimit  = 500
	ssePrettyLimit = 200
)

// sseViews lays out a response's events (the first sseEventLimit of them).
func sseViews(events []runview.SSEEvent) []sseView {
	out := make([]sseView, 0, min(len(events), sseEventLimit))
	for k, e := range events {
		if k == sseEventLimit {
			break
		}
		v := sseView{SSEEvent: e, AtMS: ms(e.At), Text: cut(strings.TrimRight(e.Data, "\r\n")), Truncated: len(e.Data) > inlineLimit, Fields: fixture.ParseEvent(e.Data)}
		v.DataText = cut(v.Fields.Data)
		if k < ssePrettyLimit && len(v.Fields.Data) <= inlineLimit {
			v.Pretty, _ = prettyJSON(v.Fields.Data)
		}
		out = append(out, v)
	}
	return out
}

func bodyOf(key, b string) bodyView {
	v := bodyView{Key: key, Text: cut(b), Size: len(b), Truncated: len(b) > inlineLimit}
	if !v.Truncated {
		v.Pretty, _ = prettyJSON(b)
	}
	return v
}

// exchanges reads the exchanges of row i, rehydrating their spans first (payloads load on
// demand: each exchange's bodies are fetched the first time a panel shows it).
func (s *Server) exchanges(ctx context.Context, c *cachedRun, i int) []exchangeView {
	c.mu.Lock()
	nodes := c.view.ExchangeNodes(i)
	c.mu.Unlock()
	for _, j := range nodes {
		_, _, _ = s.span(ctx, c, j) // an unreadable body stays a reference; ReadErr or the ref shows it
	}
	c.mu.Lock()
	exs := c.view.ExchangesOf(i)
	c.mu.Unlock()
	out := make([]exchangeView, 0, len(exs))
	for _, ex := range exs {
		v := exchangeView{HTTPExchange: ex, Own: ex.Node == i, StatusText: http.StatusText(ex.Status), Row: ex.Node,
			Request: bodyOf(fixture.AttrRequestBody, ex.RequestBody), Response: bodyOf(fixture.AttrResponseBody, ex.ResponseBody)}
		v.Events, v.MoreEvents = sseViews(ex.Events), max(0, len(ex.Events)-sseEventLimit)
		for _, e := range ex.Events {
			v.Uncovered -= e.Size
		}
		if len(ex.Events) > 0 {
			v.Uncovered += len(ex.ResponseBody)
		}
		out = append(out, v)
	}
	return out
}

// exchangeName is a recorded exchange's timeline name: "POST api.openai.com/v1/chat/completions
// → 200" (no query: it may be long, and the panel shows the whole URL).
func exchangeName(method, rawURL string, status int) string {
	where := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		where = u.Host + u.EscapedPath()
	}
	st := "no response"
	if status > 0 {
		st = strconv.Itoa(status)
	}
	return method + " " + where + " → " + st
}

// mcpView is one recorded MCP exchange on a span's panel: the request (method, tool, arguments)
// and the response (content items one by one, isError, or the JSON-RPC error), each with its
// exact JSON-RPC line (copy and download give the recorded bytes).
type mcpView struct {
	*runview.MCPExchange
	Own       bool // the panel's span is this exchange
	Outcome   string
	Bad       bool // isError or a JSON-RPC error
	Arguments bodyView
	Params    bodyView
	Request   bodyView
	Response  bodyView
	Content   []mcpContentView
}

type mcpContentView struct {
	Type string
	Body bodyView
}

// mcpExchanges reads the MCP exchanges of row i, rehydrating their spans first.
func (s *Server) mcpExchanges(ctx context.Context, c *cachedRun, i int) []mcpView {
	c.mu.Lock()
	nodes := c.view.ExchangeNodes(i)
	c.mu.Unlock()
	for _, j := range nodes {
		if c.rows[j].Kind == kindMCP {
			_, _, _ = s.span(ctx, c, j)
		}
	}
	c.mu.Lock()
	exs := c.view.MCPExchangesOf(i)
	c.mu.Unlock()
	out := make([]mcpView, 0, len(exs))
	for _, ex := range exs {
		v := mcpView{MCPExchange: ex, Own: ex.Node == i, Outcome: "ok",
			Arguments: bodyOf(genai.AttrToolCallArguments, ex.Arguments), Params: bodyOf("", ex.Params),
			Request: bodyOf(fixture.AttrMCPRequest, ex.Request), Response: bodyOf(fixture.AttrMCPResponse, ex.Response)}
		switch {
		case ex.ErrorCode != "":
			v.Outcome, v.Bad = "JSON-RPC error "+ex.ErrorCode+": "+ex.ErrorMessage, true
		case ex.IsError:
			v.Outcome, v.Bad = "isError", true
		case ex.Notification:
			v.Outcome = "notification"
		case ex.Response == "":
			v.Outcome, v.Bad = "no response", true
		}
		for _, ct := range ex.Content {
			b := ct.Raw
			if ct.Type == "text" {
				b = ct.Text
			}
			v.Content = append(v.Content, mcpContentView{Type: ct.Type, Body: bodyOf("", b)})
		}
		out = append(out, v)
	}
	return out
}
