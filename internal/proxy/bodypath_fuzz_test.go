// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzBodyPath: parsing and applying any body path never panics, and a short-form path means
// what it meant before RFC 9535 took over: it is accepted exactly when the hand-written grammar
// accepted it, and removes exactly what the hand-written walker removed, on any JSON document.
func FuzzBodyPath(f *testing.F) {
	doc := []byte(`{"model":"m","x-id":"1","0":"z","messages":[{"id":"a","c":[1,{"id":2}]},{"id":"b"}],"metadata":{"request_id":"r"}}`)
	for _, p := range []string{"metadata.request_id", "messages[*].id", "messages[1].id", "x-id", "0", "messages[*].c[*].id",
		"a..b", "messages[", "a[x]", "[*].id", "$..id", "$.messages[?@.id=='a']", "$['x-id']", "$.messages[-1]"} {
		f.Add(p, doc)
	}
	f.Fuzz(func(t *testing.T, p string, body []byte) {
		bp, err := parseBodyPath(p)
		short := !strings.HasPrefix(p, "$")
		if short && !utf8.ValidString(p) {
			// The old grammar accepted it and matched nothing (decoded names are valid UTF-8);
			// now it is refused, which says so at start-up.
			if err == nil {
				t.Fatalf("%q: not valid UTF-8, accepted", p)
			}
			return
		}
		if short && (err == nil) != (legacyCheckPath(p) == nil) {
			t.Fatalf("%q: accepted %v, the old grammar %v", p, err, legacyCheckPath(p))
		}
		decode := func() (any, bool) {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			return v, dec.Decode(&v) == nil
		}
		v, ok := decode()
		if err != nil || !ok {
			return
		}
		got := bp.remove(v)
		_, _ = bp.locate(body)
		if !short {
			return
		}
		w, _ := decode()
		want := legacyRemovePath(w, splitPath(p))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q on %s: removed to %v, the old walker to %v", p, body, got, want)
		}
	})
}

// legacyCheckPath is the hand-written grammar's check that bodyPath replaced (kept here as the
// oracle of FuzzBodyPath): it reports why an IgnoreBody path cannot select anything: an empty segment ("a..b"),
// or a bracket that is not "[*]" or "[N]".
func legacyCheckPath(p string) error {
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return errors.New("empty segment (paths are like metadata.request_id or messages[*].id)")
		}
	}
	for _, seg := range splitPath(p) {
		if !strings.HasPrefix(seg, "[") {
			continue
		}
		idx, closed := strings.CutSuffix(seg[1:], "]")
		if n, err := strconv.Atoi(idx); !closed || (idx != "*" && (err != nil || n < 0 || strconv.Itoa(n) != idx)) {
			return fmt.Errorf("bad index %q (want [*] or [N])", seg)
		}
	}
	return nil
}

// legacyRemovePath is the hand-written walker that bodyPath replaced: it deletes the value at path from v (in place where possible) and returns v.
func legacyRemovePath(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	seg := path[0]
	switch x := v.(type) {
	case map[string]any:
		if strings.HasPrefix(seg, "[") {
			return v
		}
		if len(path) == 1 {
			delete(x, seg)
			return x
		}
		if c, ok := x[seg]; ok {
			x[seg] = legacyRemovePath(c, path[1:])
		}
		return x
	case []any:
		if !strings.HasPrefix(seg, "[") || len(path) == 1 {
			return v
		}
		idx := strings.Trim(seg, "[]")
		for i := range x {
			if idx == "*" || idx == strconv.Itoa(i) {
				x[i] = legacyRemovePath(x[i], path[1:])
			}
		}
		return x
	}
	return v
}
