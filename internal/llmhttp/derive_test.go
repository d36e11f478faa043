// SPDX-License-Identifier: Apache-2.0

package llmhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/fixture"
)

// deriveCase is one fixture of testdata/: a recorded exchange (request and response bodies as
// JSON; a streamed response as its SSE data payloads), attributes already on the span, and the
// attributes expected after Derive (JSON-valued attributes compared as JSON).
type deriveCase struct {
	URL            string            `json:"url"`
	RequestHeaders map[string]string `json:"request_headers"`
	Request        json.RawMessage   `json:"request"`
	Status         int               `json:"status"`
	ContentType    string            `json:"response_content_type"`
	Response       json.RawMessage   `json:"response"`
	SSE            []json.RawMessage `json:"response_sse"`
	Present        map[string]any    `json:"present"`
	Want           map[string]any    `json:"want"`
	WantAbsent     []string          `json:"want_absent"`
}

func (c *deriveCase) exchange() *fixture.Exchange {
	ex := &fixture.Exchange{Method: "POST", URL: c.URL, RequestHeader: http.Header{}, ResponseHeader: http.Header{},
		RequestBody: c.Request, Status: c.Status}
	for k, v := range c.RequestHeaders {
		ex.RequestHeader.Set(k, v)
	}
	ct := c.ContentType
	if ct == "" {
		ct = "application/json"
	}
	ex.ResponseHeader.Set("Content-Type", ct)
	if c.SSE != nil {
		var b strings.Builder
		for _, d := range c.SSE {
			var s string
			if json.Unmarshal(d, &s) != nil {
				var buf bytes.Buffer
				_ = json.Compact(&buf, d) // one data line per event
				s = buf.String()
			}
			b.WriteString("data: " + s + "\n\n")
		}
		ex.ResponseBody = []byte(b.String())
		ex.Chunks = fixture.SplitEvents(ex.ResponseBody)
	} else {
		ex.ResponseBody = c.Response
	}
	return ex
}

func TestDeriveFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var c deriveCase
			require.NoError(t, json.Unmarshal(raw, &c))
			attrs := pcommon.NewMap()
			require.NoError(t, attrs.FromRaw(c.Present))
			Derive(c.exchange(), attrs)
			for k, want := range c.Want {
				v, ok := attrs.Get(k)
				if !assert.True(t, ok, "attribute %s missing; got %v", k, attrs.AsRaw()) {
					continue
				}
				switch w := want.(type) {
				case map[string]any:
					wb, _ := json.Marshal(w)
					assert.JSONEq(t, string(wb), v.Str(), k)
				case []any:
					if _, isObj := first(w).(map[string]any); isObj {
						wb, _ := json.Marshal(w)
						assert.JSONEq(t, string(wb), v.Str(), k)
					} else {
						wb, _ := json.Marshal(w)
						gb, _ := json.Marshal(v.AsRaw())
						assert.JSONEq(t, string(wb), string(gb), k)
					}
				case float64:
					switch v.Type() {
					case pcommon.ValueTypeInt:
						assert.Equal(t, int64(w), v.Int(), k)
					default:
						assert.Equal(t, w, v.Double(), k)
					}
				default:
					assert.Equal(t, want, v.AsRaw(), k)
				}
			}
			for _, k := range c.WantAbsent {
				_, ok := attrs.Get(k)
				assert.False(t, ok, "attribute %s should be absent", k)
			}
		})
	}
}

func first(a []any) any {
	if len(a) == 0 {
		return nil
	}
	return a[0]
}
