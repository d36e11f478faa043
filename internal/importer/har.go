// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/cdproto/har"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
)

// HAR reads HTTP Archive 1.2 files ({"log": {"entries": [...]}}, e.g. Polly.JS recordings),
// decoding each entry into the HAR types of github.com/chromedp/cdproto/har: request method, url,
// headers and postData.text; response status, headers and content.text (base64 when
// content.encoding is "base64"), content.mimeType as Content-Type when no header gives one;
// startedDateTime and time (ms) give the span times; HTTP/2 pseudo-headers are left out. A field
// whose JSON type is not the one HAR 1.2 gives it (a string status) is an error naming the entry.
type HAR struct{}

// Name implements Format.
func (HAR) Name() string { return "har" }

// Detect implements Format: an object with a "log" holding "entries".
func (HAR) Detect(s *Sniff) bool {
	if !s.Has("log") {
		return false
	}
	var l map[string]json.RawMessage
	if json.Unmarshal(s.Keys["log"], &l) != nil {
		return false
	}
	_, ok := l["entries"]
	return ok
}

// harEntry is a HAR 1.2 entry (the types of github.com/chromedp/cdproto/har, generated from the
// HAR schema of the Chrome DevTools protocol) plus request.postData.encoding, which HAR 1.2 does
// not define but recorders write for a binary request body: it is read like
// response.content.encoding.
type harEntry struct {
	har.Entry
	Request *harRequest `json:"request"`
}

type harRequest struct {
	har.Request
	PostData *harPostData `json:"postData"`
}

type harPostData struct {
	har.PostData
	Encoding string `json:"encoding"`
}

// Parse implements Format.
func (HAR) Parse(data []byte) (ptrace.Traces, error) {
	var doc struct {
		Log struct {
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return ptrace.Traces{}, jsonError(data, 0, err)
	}
	var exs []*fixture.Exchange
	for i, r := range doc.Log.Entries {
		off := int64(bytes.Index(data, r))
		var e harEntry
		if err := json.Unmarshal(r, &e); err != nil {
			var b64 base64.CorruptInputError
			if errors.As(err, &b64) { // har.Content decodes base64 text itself
				return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d].response.content.text: invalid base64: %v", i, b64)
			}
			return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d]: %v", i, err)
		}
		req, resp := e.Request, e.Response
		if req == nil || req.Method == "" || req.URL == "" {
			return ptrace.Traces{}, errorAt(data, off, nil, "har log.entries[%d].request: method and url are required", i)
		}
		if resp == nil {
			resp = &har.Response{}
		}
		ex := &fixture.Exchange{Method: req.Method, URL: req.URL, Status: int(resp.Status),
			RequestHeader: http.Header{}, ResponseHeader: http.Header{}}
		if v := strings.TrimPrefix(strings.ToUpper(req.HTTPVersion), "HTTP/"); v != "" && v != req.HTTPVersion {
			ex.Protocol = strings.TrimSuffix(v, ".0")
		}
		for _, h := range req.Headers {
			if h != nil && !strings.HasPrefix(h.Name, ":") {
				headerAdd(ex.RequestHeader, h.Name, h.Value)
			}
		}
		for _, h := range resp.Headers {
			if h != nil && !strings.HasPrefix(h.Name, ":") {
				headerAdd(ex.ResponseHeader, h.Name, h.Value)
			}
		}
		content := resp.Content
		if content == nil {
			content = &har.Content{}
		}
		if ex.ResponseHeader.Get("Content-Type") == "" && content.MimeType != "" {
			ex.ResponseHeader.Set("Content-Type", content.MimeType)
		}
		if pd := req.PostData; pd != nil {
			ex.RequestBody = []byte(pd.Text)
			if pd.Encoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(pd.Text)
				if err != nil {
					return ptrace.Traces{}, errorAt(data, off, err, "har log.entries[%d].request.postData.text: invalid base64: %v", i, err)
				}
				ex.RequestBody = b
			}
		}
		ex.ResponseBody = content.Text // base64 already decoded (content.encoding)
		if ex.Status == 0 {
			return ptrace.Traces{}, errorAt(data, off, nil, "har log.entries[%d].response.status: missing", i)
		}
		if t, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err == nil {
			ex.Start = t
			if e.Time >= 0 { // -1: not known
				ex.End = t.Add(time.Duration(e.Time * float64(time.Millisecond)))
			}
		}
		exs = append(exs, ex)
	}
	return cassetteTraces("har", data, exs)
}
