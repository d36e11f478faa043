// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// normaliseSeeds hold each rule's trigger alone and beside the others, and strings whose bytes
// a prefilter keys on without the rule matching (a lone '-', '@', '/', a digit in a word).
var normaliseSeeds = []string{
	"ToolError", "a-b", "x@y", "a/b", "/a", "C:\\a\\b", "a\\b", "0x1f", "deadbeef00112233",
	"deadbeef", "abcdefgh", "call_8f3k2", "30s", "1.5e3ms", "-42", "a  b", "a\tb\n", " a ",
	`"q" 'r' ` + "`s`", `"unterminated`, "http://h/x y", "ftp://a:b@h/p", "a://b",
	"550E8400-E29B-41D4-A716-446655440000 id", "user@example.com/path 7",
	"read_file: open /tmp/run-42/notes.txt: no such file", "(/etc/passwd)", "k=/v", "日本 12",
	"rate   limited\n(retry in 1.5s)", "<q> <id> <n>", "<path>/x", "tool <hex>1",
}

// TestNormalisePrefilterKeepsResults: the prefilter (a rule skipped when s lacks what it needs)
// and the memo give what running every rule gives, on the seeds and on every status message and
// span name of the corpus's framework traces when RUNAGAIN_CORPUS holds them.
func TestNormalisePrefilterKeepsResults(t *testing.T) {
	inputs := append([]string(nil), normaliseSeeds...)
	if dir := os.Getenv("RUNAGAIN_CORPUS"); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "any-agent", "tests", "assets", "*_trace.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			// every JSON string value: names, status descriptions, messages, tool output
			for _, v := range jsonStrings.FindAllString(string(b), -1) {
				if u, err := strconv.Unquote(v); err == nil && len(u) < 4096 {
					inputs = append(inputs, u)
				}
			}
		}
		t.Logf("%d inputs", len(inputs))
	}
	for _, s := range inputs {
		want := normalise(s, false)
		assert.Equal(t, want, normalise(s, true), "%q", s)
		assert.Equal(t, want, Normalise(s), "%q", s)
		assert.Equal(t, want, Normalise(s), "%q, from the memo", s)
	}
}

var jsonStrings = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func FuzzNormalisePrefilter(f *testing.F) {
	for _, s := range normaliseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := normalise(s, false), normalise(s, true); want != got {
			t.Fatalf("%q: every rule %q, prefiltered %q", s, want, got)
		}
	})
}
