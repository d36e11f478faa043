package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// plantable are credentials and PII in formats with clear boundaries; the fuzz test plants one
// of them into a string leaf of the document.
var plantable = []string{
	"sk-proj-Zq3vN8xW2kLm5pR7tY9uB1cD4eF6gH0jK2lM4nP6qR8sT0vX",
	"AKIAZ7QW3ER5TY7UI9OP",
	"ghp_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLXgx",
	"carol.smith@example.net",
	"xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv",
	"glpat-Xy7Zw9Vu5Ts3Rq1Po8Nm",
	"AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
}

// plant appends " secret " to the n-th string leaf of v (modulo their number) and reports
// whether there was a leaf.
func plant(v any, n int, secret string) (any, bool) {
	var walk func(any) any
	count := 0
	var target int
	// first pass: count
	var cnt func(any)
	cnt = func(v any) {
		switch x := v.(type) {
		case string:
			count++
		case []any:
			for _, e := range x {
				cnt(e)
			}
		case map[string]any:
			for _, e := range x {
				cnt(e)
			}
		}
	}
	cnt(v)
	if count == 0 {
		return v, false
	}
	target = n % count
	i := 0
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if i == target {
				x = x + " " + secret + " "
			}
			i++
			return x
		case []any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		}
		return v
	}
	return walk(v), true
}

// FuzzRedactJSON: the JSON walker never panics, valid JSON stays valid JSON, text that is not
// JSON is returned unchanged by RedactJSON, and no planted credential survives in any leaf.
func FuzzRedactJSON(f *testing.F) {
	seeds := []string{
		`[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
		`{"a":"b","c":["d",{"e":"f\u00e9\"g\\h"}],"n":1.5e3,"t":true,"z":null}`,
		`{"headers":{"Authorization":"Bearer test_openai_api_key","Cookie":"sid=1"}}`,
		`{"arguments":"{\"password\":\"hunter2\",\"q\":\"[1,2]\"}"}`,
		`["\ud83d\ude00 emoji", "tab\tnew\nline", "", "    "]`,
		`{"k":"Credential=AKIATEST1234567890AB/2025/us-east-1/bedrock/aws4_request"}`,
		`{"deep":[[[[[[["x"]]]]]]]}`,
		`{"pem":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}`,
		`not json at all sk-`,
		`{"unterminated": "abc`,
		`[1,2,3]`,
		`{}`,
	}
	for i, s := range seeds {
		f.Add(s, uint8(i), uint8(i))
	}
	r := newTest(f, Config{})
	f.Fuzz(func(t *testing.T, doc string, leaf, which uint8) {
		if validJSON(doc) != json.Valid([]byte(doc)) {
			t.Fatalf("validJSON=%v, encoding/json.Valid=%v for %q", validJSON(doc), !validJSON(doc), doc)
		}
		out, fs, ok := r.RedactJSON(doc)
		t0 := strings.TrimLeft(doc, " \t\r\n")
		isDoc := json.Valid([]byte(doc)) && t0 != "" && (t0[0] == '{' || t0[0] == '[')
		if ok != isDoc {
			t.Fatalf("ok=%v for valid-document=%v", ok, isDoc)
		}
		if !ok {
			if out != doc || fs != nil {
				t.Fatal("invalid JSON must come back unchanged")
			}
			_, _ = r.Redact(doc) // text path must not panic either
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("valid JSON became invalid:\n in %q\nout %q", doc, out)
		}
		for _, f := range fs {
			if f.Start < 0 || f.End > len(doc) || f.Start > f.End {
				t.Fatalf("finding span %d..%d outside input of %d bytes", f.Start, f.End, len(doc))
			}
		}
		// plant a credential and check it does not survive
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		secret := plantable[int(which)%len(plantable)]
		v, planted := plant(v, int(leaf), secret)
		if !planted {
			v = map[string]any{"doc": v, "note": "see " + secret + " ."}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Skip("unmarshalable")
		}
		out, _, ok = r.RedactJSON(string(b))
		if !ok || !json.Valid([]byte(out)) {
			t.Fatalf("planted document not walked or invalid: %q", out)
		}
		for _, l := range leaves(t, out) {
			if strings.Contains(l, secret) {
				t.Fatalf("planted %q survived in leaf %q\n doc %s\n out %s", secret, l, b, out)
			}
		}
	})
}
