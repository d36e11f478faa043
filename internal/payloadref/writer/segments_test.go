// SPDX-License-Identifier: Apache-2.0

package writer

// jsonSegments as it was before jsonkit (encoding/json's Decoder), kept for the differential test
// and the benchmark that compares the two.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
)

// jsonSegments cuts a JSON value at the boundaries of its elements: for a top-level array, each
// element; for a top-level object, each member value, and each element of member values that are
// arrays. It returns the element ranges in order (the bytes between them are separators), or
// ok=false when data is not a JSON array or object (or not valid JSON).
func legacyJSONSegments(data []byte) (elems []span, ok bool) {
	i := legacySkipWS(data, 0)
	if i >= len(data) || (data[i] != '[' && data[i] != '{') {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	decodeRange := func() (span, error) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return span{}, err
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		if start < 0 || !bytes.Equal(data[start:end], raw) {
			return span{}, errors.New("offset mismatch")
		}
		return span{start, end}, nil
	}
	arrayElems := func() error {
		if _, err := dec.Token(); err != nil { // '['
			return err
		}
		for dec.More() {
			s, err := decodeRange()
			if err != nil {
				return err
			}
			elems = append(elems, s)
		}
		_, err := dec.Token() // ']'
		return err
	}
	var err error
	if data[i] == '[' {
		err = arrayElems()
	} else {
		if _, err = dec.Token(); err == nil { // '{'
			for err == nil && dec.More() {
				if _, err = dec.Token(); err != nil { // key
					break
				}
				j := legacySkipWS(data, int(dec.InputOffset()))
				if j < len(data) && data[j] == ':' {
					j = legacySkipWS(data, j+1)
				}
				if j < len(data) && data[j] == '[' {
					err = arrayElems()
				} else {
					var s span
					if s, err = decodeRange(); err == nil {
						elems = append(elems, s)
					}
				}
			}
			if err == nil {
				_, err = dec.Token() // '}'
			}
		}
	}
	if err != nil {
		return nil, false
	}
	// Anything after the value must be whitespace, else this is not one JSON value.
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return elems, true
}

func legacySkipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// TestJSONSegmentsMatchLegacy: the jsonkit segments are the encoding/json ones, byte for byte, on
// every corpus file and on edge cases, so chunk digests (object keys already stored) do not move.
func TestJSONSegmentsMatchLegacy(t *testing.T) {
	files := corpus.Walk(t, "", func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Size() < 8<<20
	})
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if diffSegments(t, f, b) {
			n++
		}
		for i, line := range bytes.Split(b, []byte("\n")) { // JSON lines files
			if i < 200 {
				diffSegments(t, f, line)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d corpus files were segmented", n)
	}
	for _, s := range segmentSeeds {
		diffSegments(t, s, []byte(s))
	}
}

var segmentSeeds = []string{
	` [ {"a":1} , [2,3], "x\"y" , null ] `, `{"m":[1,{"b":2}],"s":"v","o":{"k":[]},"e":[]}`, `[]`, `{}`,
	`[1,]`, `{"a":1,}`, `[1] [2]`, `[1] x`, `{"a"}`, `{1:2}`, `"s"`, `12`, ``, `[`, "[\"\xff\"]", `{"a":1,"a":[2]}`,
	`[1e5,-0.5,true,false]`, `{"a" : [ 1 , 2 ] , "b" : { } }`,
}

func diffSegments(t *testing.T, name string, data []byte) bool {
	t.Helper()
	got, gok := jsonSegments(data)
	want, wok := legacyJSONSegments(data)
	if gok != wok || len(got) != len(want) {
		t.Fatalf("%s: jsonkit ok=%v %d segments, encoding/json ok=%v %d", name, gok, len(got), wok, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: segment %d: %v, encoding/json %v", name, i, got[i], want[i])
		}
	}
	return gok
}

func FuzzJSONSegmentsMatchLegacy(f *testing.F) {
	for _, s := range segmentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { diffSegments(t, "fuzz", b) })
}

// BenchmarkJSONSegments compares, in one run, jsonkit's segments with encoding/json's on a
// conversation of 100 messages.
//
//	go test -run '^$' -bench JSONSegments -benchmem ./internal/payloadref/
func BenchmarkJSONSegments(b *testing.B) {
	var msgs []map[string]any
	for i := range 100 {
		msgs = append(msgs, map[string]any{"role": "user", "parts": []map[string]any{{"type": "text", "content": strings.Repeat("some words of a turn ", 10+i)}}})
	}
	data, _ := json.Marshal(msgs)
	for _, tc := range []struct {
		name string
		f    func([]byte) ([]span, bool)
	}{{"encoding_json", legacyJSONSegments}, {"jsonkit", jsonSegments}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, ok := tc.f(data); !ok {
					b.Fatal("not segmented")
				}
			}
		})
	}
}
