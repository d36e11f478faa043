// SPDX-License-Identifier: Apache-2.0

package pyjson

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// readJSONL decodes every line of a testdata file into a new T.
func readJSONL[T any](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return out
}

// TestDumpsMatchesPython: each case's expected output is what CPython 3.11 with PyYAML 6 prints
// for json.dumps(yaml.safe_load(doc)) (testdata/dumps.jsonl was written by that call): YAML 1.1
// booleans and underscores, repr floats, ensure_ascii with surrogate pairs, NaN/Infinity,
// anchors, block scalars, non-string keys.
func TestDumpsMatchesPython(t *testing.T) {
	for _, c := range readJSONL[struct{ YAML, JSON string }](t, "dumps.jsonl") {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(c.YAML), &doc); err != nil {
			t.Fatalf("%q: %v", c.YAML, err)
		}
		if got := string(Dumps(&doc)); got != c.JSON {
			t.Errorf("Dumps(%q)\n got %s\nwant %s", c.YAML, got, c.JSON)
		}
	}
}

// TestFloatReprMatchesPython: repr(float) of CPython for the float whose exact bits (float.hex)
// are given: both notations, their boundaries (1e-4 and 1e-5, 1e15 and 1e16), subnormals,
// negative zero, the shortest round-tripping digits.
func TestFloatReprMatchesPython(t *testing.T) {
	for _, c := range readJSONL[struct{ Bits, Repr string }](t, "floats.jsonl") {
		f, err := strconv.ParseFloat(c.Bits, 64)
		if err != nil {
			t.Fatalf("%s: %v", c.Bits, err)
		}
		if got := FloatRepr(f); got != c.Repr {
			t.Errorf("FloatRepr(%s) = %s, want %s", c.Bits, got, c.Repr)
		}
	}
}

// TestDumpsBinary: a !!binary scalar (which json.dumps cannot encode: yaml.safe_load gives
// bytes) is written as the string of its decoded bytes, and text that is not base64 as "".
func TestDumpsBinary(t *testing.T) {
	for doc, want := range map[string]string{
		"b: !!binary aGVsbG8g\n  d29ybGQ=\n": `{"b": "hello world"}`,
		"b: !!binary '%%%'\n":                `{"b": ""}`,
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatal(err)
		}
		if got := string(Dumps(&n)); got != want {
			t.Errorf("Dumps(%q) = %s, want %s", doc, got, want)
		}
	}
}
