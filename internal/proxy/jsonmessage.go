// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/url"
	"strings"
)

// Message is one JSON message put in the form replay matches it in, for transports that are not
// HTTP (MCP over stdio, internal/mcp): through the redactor as request bodies are, a JSON-RPC
// request's id left out (the client picks it anew every run), IgnoreBody paths removed.
type Message struct{ r *request }

// Message normalises one JSON message (a JSON-RPC line without its newline).
func (n Normalizer) Message(b []byte) Message {
	return Message{n.normalize("POST", &url.URL{Path: "/"}, "application/json", b)}
}

// Key is the message's match key: equal keys match.
func (m Message) Key() string { return m.r.bkey }

// RPCID is the compact JSON literal of a JSON-RPC request's id ("3", "\"a\""); empty when the
// message is not a request.
func (m Message) RPCID() string { return m.r.rpcID }

// MessageDiff returns the first field in which live differs from rec, named by its JSON path
// from the message's top ("params.arguments.text"); ok is false when they match.
func MessageDiff(rec, live Message) (Difference, bool) {
	d, ok := diff(rec.r, live.r)
	if !ok {
		return d, false
	}
	switch {
	case d.Field == "body":
		d.Field = "message"
	case strings.HasPrefix(d.Field, "body."):
		d.Field = strings.TrimPrefix(d.Field, "body.")
	}
	return d, true
}

// MessageSimilarity scores how close live is to rec (higher is closer), to pick the nearest
// recorded message of a divergence.
func MessageSimilarity(rec, live Message) float64 { return similarity(rec.r, live.r) }

// ReplaceRPCID returns b (a JSON-RPC message) with its top-level "id" replaced by to when it
// equals from (compact JSON literals); every other byte is kept.
func ReplaceRPCID(b []byte, from, to string) ([]byte, bool) { return replaceTopLevelID(b, from, to) }
