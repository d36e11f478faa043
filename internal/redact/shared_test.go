// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

// toolResponseJSON is a gen_ai.input.messages value whose last message is the response of a
// tool call, as its raw JSON string literal q.
func toolResponseJSON(q string) string {
	return `[{"role":"user","parts":[{"type":"text","content":"` + cleanProse + `"}]},` +
		`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":` + q + `}]}]`
}

// TestToolResultSharedWithNextCall: a tool's result (a JSON string literal under
// gen_ai.tool.call.result) is scanned once; its body, resent as a string leaf of the next LLM
// call's input messages, is a cache hit with the output and findings of a scan, clean or with
// findings. Without the shared verdict the leaf misses.
func TestToolResultSharedWithNextCall(t *testing.T) {
	uncached := newTest(t, Config{})
	for _, body := range []string{
		cleanProse + "and the shipping status of order 12 is pending",
		cleanProse + "write to jane.doe@example.com or call +44 20 7946 0958, card 4111 1111 1111 1111",
		cleanProse + "key sk-proj-Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG and \"quoted\" text",
	} {
		cache := NewCleanCache(1 << 20)
		r := newTest(t, Config{CleanCache: cache})
		q := `"` + body + `"`
		sameResults(t, uncached, r, "tool result", "gen_ai.tool.call.result", q, 1)
		if strings.Contains(body, `"`) {
			q = `"` + strings.ReplaceAll(body, `"`, `\"`) + `"`
			sameResults(t, uncached, r, "tool result with escapes", "gen_ai.tool.call.result", q, 1)
		}
		leaf := xxh3.HashString128Seed(body, r.cleanSeed(uint64(kindLeaf)))
		shared := !strings.Contains(body, `"`)
		if _, ok := cache.lru.Peek(leaf); ok != shared {
			t.Errorf("%q: the body's leaf verdict is cached: %v, want %v", body[len(cleanProse):], ok, shared)
		}
		before := cache.Stats()
		sameResults(t, uncached, r, "next call", "gen_ai.input.messages", toolResponseJSON(q), 1)
		if after := cache.Stats(); shared && after.Hits == before.Hits {
			t.Errorf("%q: the resent tool result was not a cache hit", body[len(cleanProse):])
		}
	}
}

// TestSharedLeafShape: only a plain JSON string literal long enough to be looked up, holding
// no escape and not JSON itself, gives its body to the cache.
func TestSharedLeafShape(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	long := strings.Repeat("word ", 20)
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{`"` + long + `"`, true},
		{`"short"`, false},
		{long, false},
		{`"` + long + `\n"`, false},
		{`"` + long + "\t" + `"`, false},
		{`"{` + long + `"`, false},
		{`"` + long, false},
	} {
		if _, ok := r.sharedLeaf(tc.s); ok != tc.want {
			t.Errorf("sharedLeaf(%.20q...) = %v, want %v", tc.s, ok, tc.want)
		}
	}
	if _, ok := newTest(t, Config{}).sharedLeaf(`"` + long + `"`); ok {
		t.Error("shared a leaf without a cache")
	}
}

// TestPhoneCheckedOnlyWhenItMayBeKept: a phone-shaped match inside a card number (an earlier
// rule) is dropped without its check, and the findings are those of checking every match.
func TestPhoneCheckedOnlyWhenItMayBeKept(t *testing.T) {
	r := newTest(t, Config{})
	if r.lastLazy < 0 || r.rules[r.lastLazy].name != RulePhone {
		t.Fatalf("lastLazy = %d, want the phone rule", r.lastLazy)
	}
	calls := 0
	ru := r.rules[r.lastLazy]
	check := ru.check
	ru.check = func(s string, m []int, a, b int) (int, int, bool) {
		calls++
		return check(s, m, a, b)
	}
	for _, tc := range []struct {
		text  string
		rules []string
		calls int
	}{
		{"card 4111 1111 1111 1111 on file", []string{RuleCreditCard}, 0},
		{"call +44 20 7946 0958 today", []string{RulePhone}, 1},
	} {
		calls = 0
		fs := r.Find(tc.text)
		var got []string
		for _, f := range fs {
			got = append(got, f.Rule)
		}
		if strings.Join(got, ",") != strings.Join(tc.rules, ",") || calls != tc.calls {
			t.Errorf("%q: rules %v with %d phone checks, want %v with %d", tc.text, got, calls, tc.rules, tc.calls)
		}
	}
}

// FuzzLazyPhoneCheck: checking the phone rule's matches only when they may be kept finds what
// checking every match does.
func FuzzLazyPhoneCheck(f *testing.F) {
	for _, s := range []string{"card 4111 1111 1111 1111, call +44 20 7946 0958", "ssn 123-45-6789 or 020 7946 0018",
		"iban DE89 3704 0044 0532 0130 00 tel (415) 555-2671", "10.1.2.3 and 4111-1111-1111-1111 x 555 0100 ext 12",
		"conv_9f6067c4caa7a19a9c8939024892e324", "+1 202 641 7640 +1 202 641 7640"} {
		f.Add(s)
	}
	lazy, err := New(Config{HashKey: []byte("k")})
	if err != nil {
		f.Fatal(err)
	}
	eager, err := New(Config{HashKey: []byte("k")})
	if err != nil {
		f.Fatal(err)
	}
	eager.lastLazy = -1
	f.Fuzz(func(t *testing.T, s string) {
		got, want := lazy.Find(s), eager.Find(s)
		if len(got) != len(want) {
			t.Fatalf("%q: %v, checking every match %v", s, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: %v, checking every match %v", s, got, want)
			}
		}
	})
}

// FuzzFindAllEmail: findAllEmail finds exactly what FindAllStringSubmatchIndex finds with the
// email rule's regex.
func FuzzFindAllEmail(f *testing.F) {
	for _, s := range []string{"mail jane.doe@example.com and bob@x.org", "a@b", "@@@x@y.zz", "user+tag@mail.example.org.",
		strings.Repeat("a", 70) + "@example.com", "é@ex.com x@ex.c0m x@-.com", "jane.doe@example.com@example.com"} {
		f.Add(s)
	}
	r, err := New(Config{HashKey: []byte("k")})
	if err != nil {
		f.Fatal(err)
	}
	re := r.byName[RuleEmail].re
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range []int{-1, 1} {
			got, want := findAllEmail(re, s, n), re.FindAllStringSubmatchIndex(s, n)
			if len(got) != len(want) {
				t.Fatalf("%q, n %d: %v, want %v", s, n, got, want)
			}
			for i := range got {
				if got[i][0] != want[i][0] || got[i][1] != want[i][1] {
					t.Fatalf("%q, n %d: %v, want %v", s, n, got, want)
				}
			}
		}
	})
}

// BenchmarkFindAllEmail compares the email rule's search with the regex's FindAll on the window
// of one '@' trigger in prose (80 bytes before, 260 after), in the same run.
//
//	go test -run '^$' -bench FindAllEmail ./internal/redact/
func BenchmarkFindAllEmail(b *testing.B) {
	r := newTest(b, Config{})
	re := r.byName[RuleEmail].re
	w := cleanProse[:80] + "bob.5127@example.com" + strings.Repeat(" please summarise the report", 10)[:260]
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			re.FindAllStringSubmatchIndex(w, -1)
		}
	})
	b.Run("findAllEmail", func(b *testing.B) {
		for b.Loop() {
			findAllEmail(re, w, -1)
		}
	})
}
