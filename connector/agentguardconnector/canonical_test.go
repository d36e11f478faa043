package agentguardconnector

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCanonicalJSON(t *testing.T) {
	same := [][2]string{
		{`{"city":"Paris","unit":"c"}`, `{ "unit" : "c",  "city":"Paris" }`},
		{`{"a":{"y":[1, 2,{"q":true,"p":null}],"x":"s p a c e"}}`, "{\"a\":{\"x\":\"s p a c e\",\n\"y\":[1,2,{\"p\":null,\"q\":true}]}}"},
		{`{"k":"quote \" inside","b":"x"}`, `{"b":"x","k":"quote \" inside"}`},
		{`[]`, ` [ ] `},
	}
	for _, p := range same {
		a, ok1 := canonicalJSON(nil, []byte(p[0]))
		b, ok2 := canonicalJSON(nil, []byte(p[1]))
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
		a, _ := canonicalJSON(nil, []byte(p[0]))
		b, _ := canonicalJSON(nil, []byte(p[1]))
		assert.NotEqual(t, string(a), string(b))
	}
	for _, bad := range []string{`{"a":}`, `{"a" 1}`, `[1,`, `{"a":"unterminated}`, `{} x`, ``} {
		_, ok := canonicalJSON(nil, []byte(bad))
		assert.False(t, ok, "%q", bad)
	}
}
