// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestBodyPathRemove: the short form removes object members only and takes keys literally (as
// the hand-written grammar it replaces did); RFC 9535 queries remove what they select, array
// elements included, and leave the document itself.
func TestBodyPathRemove(t *testing.T) {
	canon := func(s string) string {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		b, _ := json.Marshal(v) // maps marshal with sorted keys
		return string(b)
	}
	// doc with "%s" for the messages, the metadata and the grid
	const tmpl = `{"model":"m","x-request-id":"r1","0":"zero","a.b":1,"messages":[%s],"metadata":%s,"grid":%s}`
	const m1, m2 = `{"id":"m1","role":"system","content":"s"}`, `{"id":"m2","role":"user","content":"u","meta":{"request_id":"q"}}`
	const md, grid = `{"request_id":"r2","team":"t"}`, `[[1,2],[3,4]]`
	doc := fmt.Sprintf(tmpl, m1+","+m2, md, grid)
	for _, c := range []struct{ path, want string }{
		// short form
		{"metadata.request_id", fmt.Sprintf(tmpl, m1+","+m2, `{"team":"t"}`, grid)},
		{"messages[*].id", fmt.Sprintf(tmpl, `{"role":"system","content":"s"},{"role":"user","content":"u","meta":{"request_id":"q"}}`, md, grid)},
		{"messages[1].meta.request_id", fmt.Sprintf(tmpl, m1+`,{"id":"m2","role":"user","content":"u","meta":{}}`, md, grid)},
		{"x-request-id", strings.Replace(doc, `"x-request-id":"r1",`, "", 1)},
		{"0", strings.Replace(doc, `"0":"zero",`, "", 1)},
		{"messages[0]", doc},   // an element is not removed by a short path
		{"grid[*][*]", doc},    // nor are elements of elements
		{"model[0]", doc},      // an index on a string selects nothing
		{"messages.0.id", doc}, // "0" is a key, and messages is an array
		{"nothing.here", doc},
		// RFC 9535
		{"$..request_id", fmt.Sprintf(tmpl, m1+`,{"id":"m2","role":"user","content":"u","meta":{}}`, `{"team":"t"}`, grid)},
		{"$['x-request-id']", strings.Replace(doc, `"x-request-id":"r1",`, "", 1)},
		{"$['a.b']", strings.Replace(doc, `"a.b":1,`, "", 1)},
		{"$.messages[?@.role=='system']", fmt.Sprintf(tmpl, m2, md, grid)},
		{"$.messages[-1].id", fmt.Sprintf(tmpl, m1+`,{"role":"user","content":"u","meta":{"request_id":"q"}}`, md, grid)},
		{"$.grid[*][0]", fmt.Sprintf(tmpl, m1+","+m2, md, `[[2],[4]]`)},
		{"$.messages[*]", fmt.Sprintf(tmpl, "", md, grid)},
		{"$", doc},
	} {
		bp, err := parseBodyPath(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(bp.remove(v))
		if err != nil {
			t.Fatal(err)
		}
		if want := canon(c.want); string(out) != want {
			t.Errorf("remove %s:\n got %s\nwant %s", c.path, out, want)
		}
	}
}

// TestBodyPathErrors: a malformed path, in either form, is an error of NewReplayer that names
// the flag and quotes the path; a valid RFC 9535 query is accepted.
func TestBodyPathErrors(t *testing.T) {
	for p, ok := range map[string]bool{
		"$..request_id": true, "$.messages[?@.role=='system'].id": true, "$['x-request-id']": true,
		"$.a[": false, "$.messages[?@.role==]": false, "$a": false, "$.a.": false,
		"me\x8bsages": false, // not UTF-8: it would have matched "me\ufffdsages"
	} {
		_, err := NewReplayer(Config{Logger: quietLogger()}, ptrace.NewTraces(), pcommon.TraceID{}, ReplayOptions{IgnoreBody: []string{p}})
		switch {
		case (err == nil) != ok:
			t.Errorf("IgnoreBody %q: %v", p, err)
		case err != nil && (!strings.Contains(err.Error(), strconv.Quote(p)) || !strings.Contains(err.Error(), "--ignore-body-field")):
			t.Errorf("IgnoreBody %q: error does not name the flag and the path: %v", p, err)
		}
	}
}

// TestParseEditRFC9535: --set takes a singular RFC 9535 query too (a negative index counts from
// the end) and refuses one that can name several values.
func TestParseEditRFC9535(t *testing.T) {
	body := []byte(`{"messages":[{"role":"system","content":"a"},{"role":"user","content":"b"}],"x-k":{"0":1}}`)
	for spec, want := range map[string]string{
		`$.messages[-1].content="c"`: `{"role":"user","content":"c"}`,
		`$['x-k']['0']=2`:            `"x-k":{"0":2}`,
		`x-k.0=3`:                    `"x-k":{"0":3}`,
	} {
		e, err := ParseEdit(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if !e.exists(body) {
			t.Fatalf("%s: not found", spec)
		}
		out, err := e.apply(body)
		if err != nil || !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s: %s %v, want %s in it", spec, out, err, want)
		}
	}
	for _, spec := range []string{"$.messages[*].content=x", "$..content=x", "$.messages[0:1].content=x", "$.messages[?@.role=='user'].content=x", "$.a[=1"} {
		if _, err := ParseEdit(spec); err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("%s: %v", spec, err)
		}
	}
	e, _ := ParseEdit(`$.messages[5].content=1`)
	if e.exists(body) {
		t.Error("an index past the end exists")
	}
}
