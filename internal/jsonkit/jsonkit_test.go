// SPDX-License-Identifier: Apache-2.0

package jsonkit

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/runagain/runagain/internal/testutil/benchtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var validityCases = []string{
	`{}`, ` [ ] `, `[1,2.5e3,-0,0.1E-2,null,true,false,"x"]`, `{"a":{"b":[{"c":"d"}]}}`,
	`{"a":1,"a":2}`, "\"\xff\xfe invalid utf-8\"", `"\ud800 lone surrogate"`, `"\u00e9\n\t\"\\\/"`,
	`"just a string"`, `12`, `null`,
	``, ` `, `[`, `{"a":}`, `{"a" 1}`, `[1,]`, `{"a":1,}`, `{} {}`, `[] x`, `01`, `1.`, `.5`, `+1`, `-`, `1e`,
	`"unterminated`, "\"ctl\x01\"", `"\x"`, `"\u12"`, `{a:1}`, `['x']`, `tru`, `nul`, `[1 2]`, `{"a":1 "b":2}`,
}

// TestValidAgreesWithEncodingJSON: Valid gives encoding/json.Valid's verdict (the contract of
// every caller that switched from a hand-written validator or from json.Valid).
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validityCases {
		assert.Equal(t, json.Valid([]byte(c)), Valid([]byte(c)), "%q", c)
		assert.Equal(t, json.Valid([]byte(c)), ValidString(c), "%q", c)
	}
	deep := make([]byte, 0, 20002)
	for range 10001 {
		deep = append(deep, '[')
	}
	for range 10001 {
		deep = append(deep, ']')
	}
	assert.Equal(t, json.Valid(deep), Valid(deep))
}

func FuzzValid(f *testing.F) {
	for _, c := range validityCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) != Valid([]byte(s)) {
			t.Fatalf("%q: encoding/json %v, jsonkit %v", s, json.Valid([]byte(s)), Valid([]byte(s)))
		}
		sc := GetScannerString(s)
		defer PutScanner(sc)
		var err error
		for err == nil {
			_, err = sc.Next()
		}
		if errors.Is(err, io.EOF) != json.Valid([]byte(s)) {
			t.Fatalf("%q: scanner ended with %v, encoding/json.Valid %v", s, err, json.Valid([]byte(s)))
		}
	})
}

func TestScannerTokens(t *testing.T) {
	src := ` {"role" : "user", "parts":[ {"n":1.5,"t":true} , "x\"y" ], "e":{}} `
	sc := NewScanner([]byte(src))
	type tok struct {
		raw          string
		name, member bool
	}
	var got []tok
	for {
		tk, err := sc.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, tok{src[tk.Start:tk.End], tk.Name, tk.Member})
		assert.Equal(t, Kind(src[tk.Start]), normal(tk.Kind))
	}
	want := []tok{{"{", false, false}, {`"role"`, true, false}, {`"user"`, false, true}, {`"parts"`, true, false}, {"[", false, false},
		{"{", false, false}, {`"n"`, true, false}, {"1.5", false, true}, {`"t"`, true, false}, {"true", false, true}, {"}", false, false},
		{`"x\"y"`, false, false}, {"]", false, false}, {`"e"`, true, false}, {"{", false, false}, {"}", false, false}, {"}", false, false}}
	assert.Equal(t, want, got)

	// a whole value at once, with its range
	sc.Reset([]byte(src))
	_, _ = sc.Next() // {
	_, _ = sc.Next() // "role"
	v, err := sc.Value()
	require.NoError(t, err)
	assert.Equal(t, `"user"`, src[v.Start:v.End])
	_, _ = sc.Next() // "parts"
	v, err = sc.Value()
	require.NoError(t, err)
	assert.Equal(t, `[ {"n":1.5,"t":true} , "x\"y" ]`, src[v.Start:v.End])
	assert.True(t, v.Member)

	for _, bad := range []string{`{} {}`, `[1] 2`} {
		sc.Reset([]byte(bad))
		var err error
		for err == nil {
			_, err = sc.Next()
		}
		assert.True(t, errors.Is(err, ErrTrailing), "%q: %v", bad, err)
	}
	sc.Reset([]byte(`[1,`))
	for err == nil || errors.Is(err, io.EOF) {
		if _, err = sc.Next(); errors.Is(err, io.EOF) {
			t.Fatal("EOF on truncated input")
		}
	}
}

func normal(k Kind) Kind {
	if k == '0' {
		return '1'
	}
	return k
}

// TestCanonical: RFC 8785 examples (section 3.2.3 ordering by UTF-16 code units, 3.2.2.3 numbers,
// 3.2.2.2 minimal string escapes), with integers kept as written.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : [ 1, 2.50, 1e2, -0.0 ], "a" : "x" } `:         `{"a":"x","b":[1,2.5,100,0]}`,
		`{"\u20ac":1,"\r":2,"1":3,"\ud83d\ude00":4,"\u00f6":5}`: "{\"\\r\":2,\"1\":3,\"ö\":5,\"€\":1,\"😀\":4}",
		`"\u0041\/\u00e9"`:                 `"A/é"`,
		`{"id":12345678901234567890123}`:   `{"id":12345678901234567890123}`,
		`{"a":1,"a":0}`:                    `{"a":0,"a":1}`,
		`[{"z":{"y":1,"x":2}},{"k":null}]`: `[{"z":{"x":2,"y":1}},{"k":null}]`,
	} {
		got, err := Canonical([]byte("prefix:"), []byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, "prefix:"+want, string(got), in)
	}
	for _, bad := range []string{`{"a":}`, `[1,`, `{} x`, ``} {
		out, err := CanonicalString([]byte("p"), bad)
		assert.Error(t, err, bad)
		assert.Equal(t, "p", string(out))
	}
}

func TestScannerAllocs(t *testing.T) {
	if benchtest.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	src := []byte(`[{"role":"user","parts":[{"type":"text","content":"hello \"world\"","n":[1,2,3]}]}]`)
	sc := NewScanner(src)
	allocs := testing.AllocsPerRun(100, func() {
		sc.Reset(src)
		for {
			if _, err := sc.Next(); err != nil {
				break
			}
		}
	})
	assert.Zero(t, allocs)
}
