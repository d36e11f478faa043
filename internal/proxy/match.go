// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/runagain/runagain/internal/redact"
)

// Normalizer puts requests in the form they are matched in: query values and bodies pass
// through the redactor (the detection core of agent_redaction, with the same hash key), so a
// value the pipeline stored as "[REDACTED:rule]" or "rule:<hash>" matches the live value; JSON
// bodies are then compared as values (key order and whitespace do not matter).
//
// Multipart and URL-encoded form bodies are compared as their parts (multipart boundaries are
// random per request), as "body.parts[i].name/filename/content_type/body" and "body.<field>".
// IgnoreBody and IgnoreQuery remove fields that legitimately change between runs (a request id,
// a timestamp in a prompt) before matching.
type Normalizer struct {
	Redactor *redact.Redactor // nil: no redaction
	// IgnoreBody are JSON paths removed from bodies before matching (bodypath.go): in the short
	// form "metadata.request_id", "messages[*].id" ([*] is every element; a short path removes
	// object members only), or as RFC 9535 queries ("$..request_id"). A malformed path removes
	// nothing; NewReplayer rejects it.
	IgnoreBody []string
	// ignore holds IgnoreBody parsed (NewReplayer); nil: parsed on each request.
	ignore []bodyPath
	// IgnoreQuery are query parameter names removed before matching.
	IgnoreQuery []string
}

// request is a request in normalised form.
type request struct {
	method string
	path   string
	query  url.Values // redacted values
	qkey   string     // canonical encoding of query
	body   []byte     // redacted body
	json   any        // decoded JSON body (UseNumber), nil when not JSON
	bkey   string     // canonical encoding of the body
	rpcID  string     // a JSON-RPC 2.0 request's id (compact JSON), left out of json and bkey
}

func (r *request) key() string {
	return r.method + " " + r.path + "?" + r.qkey + "\x00" + r.bkey
}

func (n Normalizer) normalize(method string, u *url.URL, contentType string, body []byte) *request {
	r := &request{method: strings.ToUpper(method), path: u.EscapedPath(), query: url.Values{}}
	if r.path == "" {
		r.path = "/"
	}
	q := u.Query()
	for _, k := range n.IgnoreQuery {
		delete(q, k)
	}
	for k, vs := range q {
		for _, v := range vs {
			if n.Redactor != nil {
				v, _ = n.Redactor.RedactKeyed(k, v)
			}
			r.query[k] = append(r.query[k], v)
		}
	}
	r.qkey = r.query.Encode() // sorted by key
	s := string(body)
	if n.Redactor != nil && len(s) > 0 {
		s, _ = n.Redactor.Redact(s)
	}
	r.body = []byte(s)
	r.bkey = s
	if v, ok := formValue(contentType, body, n.Redactor); ok {
		r.json = v
	} else if t := bytes.TrimSpace(r.body); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			r.json = v
		}
	}
	if id, rest, ok := rpcRequestID(r.json); ok {
		r.rpcID, r.json = id, rest // the client picks it anew every run (jsonrpc.go)
	}
	if r.json != nil {
		for _, p := range n.ignorePaths() {
			r.json = p.remove(r.json)
		}
		if c, err := json.Marshal(r.json); err == nil { // maps marshal with sorted keys
			r.bkey = "json:" + string(c)
		}
	}
	return r
}

// ignorePaths returns IgnoreBody parsed, leaving out malformed paths.
func (n Normalizer) ignorePaths() []bodyPath {
	if n.ignore != nil || len(n.IgnoreBody) == 0 {
		return n.ignore
	}
	var out []bodyPath
	for _, p := range n.IgnoreBody {
		if bp, err := parseBodyPath(p); err == nil {
			out = append(out, bp)
		}
	}
	return out
}

// formValue decodes a multipart or URL-encoded form body into a JSON-like value: multipart as
// {"parts": [{"name", "filename", "content_type", "body"}...]} (the boundary left out),
// URL-encoded as {field: value or [values]}. Values pass through the redactor.
func formValue(contentType string, body []byte, rd *redact.Redactor) (any, bool) {
	if contentType == "" {
		return nil, false
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, false
	}
	red := func(k, v string) string {
		if rd != nil {
			v, _ = rd.RedactKeyed(k, v)
		}
		return v
	}
	switch {
	case strings.HasPrefix(mt, "multipart/") && params["boundary"] != "":
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		var parts []any
		for i := 0; i < 10000; i++ {
			p, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return map[string]any{"parts": parts}, true
			}
			if err != nil {
				return nil, false
			}
			b, err := io.ReadAll(p)
			if err != nil {
				return nil, false
			}
			parts = append(parts, map[string]any{"name": p.FormName(), "filename": p.FileName(),
				"content_type": p.Header.Get("Content-Type"), "body": red(p.FormName(), string(b))})
		}
		return nil, false
	case mt == "application/x-www-form-urlencoded":
		vs, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, false
		}
		m := map[string]any{}
		for k, v := range vs {
			if len(v) == 1 {
				m[k] = red(k, v[0])
				continue
			}
			l := make([]any, len(v))
			for i, x := range v {
				l[i] = red(k, x)
			}
			m[k] = l
		}
		return m, true
	}
	return nil, false
}

// Difference is the first field in which a request differs from a recorded one.
type Difference struct {
	Field    string // "method", "path", "query.<name>", "body", "body.<json path>"
	Expected string // the recorded value (normalised, at most 200 bytes shown)
	Got      string // the live value
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: expected %s, got %s", d.Field, d.Expected, d.Got)
}

// diff returns the first difference of live from rec, in the order method, path, query, body;
// ok is false when they match.
func diff(rec, live *request) (Difference, bool) {
	if rec.method != live.method {
		return Difference{"method", rec.method, live.method}, true
	}
	if rec.path != live.path {
		return Difference{"path", rec.path, live.path}, true
	}
	if rec.qkey != live.qkey {
		for _, k := range unionKeys(rec.query, live.query) {
			a, b := strings.Join(rec.query[k], ","), strings.Join(live.query[k], ",")
			_, ina := rec.query[k]
			_, inb := live.query[k]
			if a != b || ina != inb {
				return Difference{"query." + k, showOpt(a, ina), showOpt(b, inb)}, true
			}
		}
	}
	if rec.bkey != live.bkey {
		if rec.json != nil && live.json != nil {
			if d, ok := jsonDiff("body", rec.json, live.json); ok {
				return d, true
			}
		}
		return Difference{"body", bodyShow(rec.body, live.body), bodyShow(live.body, rec.body)}, true
	}
	return Difference{}, false
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[M ~map[string]V, V any](a, b M) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func showOpt(v string, present bool) string {
	if !present {
		return "(absent)"
	}
	return strconv.Quote(clip(v))
}

// bodyShow shows a around the first byte where it differs from b.
func bodyShow(a, b []byte) string {
	if len(a) == 0 {
		return "(empty)"
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-40)
	hi := min(len(a), i+160)
	s := string(a[lo:hi])
	if lo > 0 {
		s = "..." + s
	}
	if hi < len(a) {
		s += "..."
	}
	return fmt.Sprintf("%s (%d bytes, differs at byte %d)", strconv.Quote(s), len(a), i)
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func jsonShow(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b))
}

// jsonDiff finds the first differing path between two decoded JSON values.
func jsonDiff(path string, a, b any) (Difference, bool) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range unionKeys(av, bv) {
			x, inA := av[k]
			y, inB := bv[k]
			p := path + "." + k
			if !inA {
				return Difference{p, "(absent)", jsonShow(y)}, true
			}
			if !inB {
				return Difference{p, jsonShow(x), "(absent)"}, true
			}
			if d, ok := jsonDiff(p, x, y); ok {
				return d, true
			}
		}
		return Difference{}, false
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < len(av) && i < len(bv); i++ {
			if d, ok := jsonDiff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); ok {
				return d, true
			}
		}
		if len(av) != len(bv) {
			return Difference{path + ".length", strconv.Itoa(len(av)), strconv.Itoa(len(bv))}, true
		}
		return Difference{}, false
	}
	ja, jb := jsonShow(a), jsonShow(b)
	if ja != jb {
		return Difference{path, ja, jb}, true
	}
	return Difference{}, false
}

// similarity scores how close live is to rec, for picking the nearest recorded request.
func similarity(rec, live *request) float64 {
	s := 0.0
	if rec.method == live.method {
		s += 8
	}
	if rec.path == live.path {
		s += 4
	}
	if rec.qkey == live.qkey {
		s += 2
	}
	if rec.bkey == live.bkey {
		s++
	} else if rec.json != nil && live.json != nil {
		s += jsonSimilarity(rec.json, live.json, 0)
	}
	return s
}

// jsonSimilarity is the fraction (0..1) of equal leaves.
func jsonSimilarity(a, b any, depth int) float64 {
	if depth > 32 {
		return 0
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av)+len(bv) == 0 {
			return boolF(ok)
		}
		n, sum := 0, 0.0
		for k, x := range av {
			n++
			if y, ok := bv[k]; ok {
				sum += jsonSimilarity(x, y, depth+1)
			}
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				n++
			}
		}
		return sum / float64(n)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av)+len(bv) == 0 {
			return boolF(ok)
		}
		n := max(len(av), len(bv))
		sum := 0.0
		for i := 0; i < len(av) && i < len(bv); i++ {
			sum += jsonSimilarity(av[i], bv[i], depth+1)
		}
		return sum / float64(n)
	}
	return boolF(jsonShow(a) == jsonShow(b))
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
