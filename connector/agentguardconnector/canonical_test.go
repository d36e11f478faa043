// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalJSON(t *testing.T) {
	same := [][2]string{
		{`{"city":"Paris","unit":"c"}`, `{ "unit" : "c",  "city":"Paris" }`},
		{`{"a":{"y":[1, 2,{"q":true,"p":null}],"x":"s p a c e"}}`, "{\"a\":{\"x\":\"s p a c e\",\n\"y\":[1,2,{\"p\":null,\"q\":true}]}}"},
		{`{"k":"quote \" inside","b":"x"}`, `{"b":"x","k":"quote \" inside"}`},
		{`[]`, ` [ ] `},
	}
	for _, p := range same {
		a, ok1 := canonicalJSON(nil, p[0])
		b, ok2 := canonicalJSON(nil, p[1])
		assert.True(t, ok1 && ok2, "%q / %q", p[0], p[1])
		assert.Equal(t, string(a), string(b))
		assert.True(t, json.Valid(a), "%s", a)
	}
	differ := [][2]string{
		{`{"city":"Paris"}`, `{"city":"paris"}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":"x y"}`, `{"a":"xy"}`},
	}
	for _, p := range differ {
		a, _ := canonicalJSON(nil, p[0])
		b, _ := canonicalJSON(nil, p[1])
		assert.NotEqual(t, string(a), string(b))
	}
	for _, bad := range []string{`{"a":}`, `{"a" 1}`, `[1,`, `{"a":"unterminated}`, `{} x`, ``} {
		_, ok := canonicalJSON(nil, bad)
		assert.False(t, ok, "%q", bad)
	}
}

// randomJSON writes v (built from maps, slices, strings, numbers) with members in an order and
// spacing chosen by r.
func randomJSON(r *rand.Rand, v any) string {
	sp := func() string { return []string{"", " ", "\n  "}[r.IntN(3)] }
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		out := "{" + sp()
		for i, k := range keys {
			if i > 0 {
				out += "," + sp()
			}
			kb, _ := json.Marshal(k)
			out += string(kb) + sp() + ":" + sp() + randomJSON(r, x[k])
		}
		return out + sp() + "}"
	case []any:
		out := "[" + sp()
		for i, e := range x {
			if i > 0 {
				out += "," + sp()
			}
			out += randomJSON(r, e)
		}
		return out + "]"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(6); {
	case depth > 3 || n == 0:
		return fmt.Sprintf("s%d \"q\" %d", r.IntN(5), r.IntN(3))
	case n == 1:
		return float64(r.IntN(100))
	case n == 2:
		s := make([]any, r.IntN(4))
		for i := range s {
			s[i] = randomValue(r, depth+1)
		}
		return s
	default:
		m := map[string]any{}
		for i := r.IntN(12); i > 0; i-- {
			m[fmt.Sprintf("k%d", r.IntN(20))] = randomValue(r, depth+1)
		}
		return m
	}
}

// TestCanonicalJSONProperty: two renderings of the same value with different member order and
// spacing have the same canonical form, and the canonical form decodes to that value.
func TestCanonicalJSONProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		v := map[string]any{"root": randomValue(r, 0)}
		a, b := randomJSON(r, v), randomJSON(r, v)
		ca, ok1 := canonicalJSON(nil, a)
		cb, ok2 := canonicalJSON(nil, b)
		require.True(t, ok1 && ok2, "%s / %s", a, b)
		require.Equal(t, string(ca), string(cb), "%s / %s", a, b)
		var back any
		require.NoError(t, json.Unmarshal(ca, &back), "%s", ca)
		require.Equal(t, v, back)
	}
}

// TestCanonicalJSONRFC8785: what the RFC 8785 form adds to the old one (whitespace and member
// order only): equal strings escaped differently and equal floats written differently are one
// form; integers keep their digits (ids above 2^53 stay distinct).
func TestCanonicalJSONRFC8785(t *testing.T) {
	for _, p := range [][2]string{
		{`{"q":"\u0041\/b"}`, `{"q":"A/b"}`},
		{`{"t":1.50,"u":1e2}`, `{"u":100,"t":1.5}`},
	} {
		a, ok1 := canonicalJSON(nil, p[0])
		b, ok2 := canonicalJSON(nil, p[1])
		require.True(t, ok1 && ok2)
		assert.Equal(t, string(a), string(b))
	}
	a, _ := canonicalJSON(nil, `{"id":12345678901234567890}`)
	b, _ := canonicalJSON(nil, `{"id":12345678901234567891}`)
	assert.NotEqual(t, string(a), string(b))
}

// BenchmarkCanonicalJSON compares, in one run, the jsonkit (jsontext) canonical form with the
// hand-written one it replaced, on tool-call arguments of a few hundred bytes.
//
//	go test -run '^$' -bench CanonicalJSON -benchmem ./connector/agentguardconnector/
func BenchmarkCanonicalJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	var args []string
	for range 64 {
		args = append(args, randomJSON(r, map[string]any{"query": "weather in Paris", "opts": randomValue(r, 1), "limit": 10.0}))
	}
	for _, tc := range []struct {
		name string
		f    func([]byte, string) ([]byte, bool)
	}{{"legacy", legacyCanonicalJSON}, {"jsonkit", canonicalJSON}} {
		b.Run(tc.name, func(b *testing.B) {
			var buf []byte
			i := 0
			for b.Loop() {
				var ok bool
				if buf, ok = tc.f(buf[:0], args[i%len(args)]); !ok {
					b.Fatal("not canonicalised")
				}
				i++
			}
		})
	}
}
