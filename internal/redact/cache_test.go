// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/runagain/runagain/internal/corpus"
)

// sameResults fails t when n calls of the cached Redactor's RedactValue differ from the uncached
// one's on (key, s): output bytes, findings, malformed verdict.
func sameResults(t testing.TB, uncached, cached *Redactor, name, key, s string, n int) {
	t.Helper()
	want, wfs, wbad := uncached.RedactValue(key, s)
	for k := range n {
		got, gfs, gbad := cached.RedactValue(key, s)
		if got != want || gbad != wbad || len(gfs) != len(wfs) {
			t.Fatalf("%s, call %d: with the cache %d findings (malformed %v), without %d (malformed %v); outputs equal: %v",
				name, k, len(gfs), gbad, len(wfs), wbad, got == want)
		}
		for i := range gfs {
			if gfs[i] != wfs[i] {
				t.Fatalf("%s, call %d: finding %d: %+v with the cache, %+v without", name, k, i, gfs[i], wfs[i])
			}
		}
	}
}

// messagesJSON is a gen_ai.input.messages value holding texts as user messages.
func messagesJSON(texts ...string) string {
	var msgs []map[string]any
	for _, t := range texts {
		msgs = append(msgs, map[string]any{"role": "user", "parts": []map[string]any{{"type": "text", "content": t}}})
	}
	b, _ := json.Marshal(msgs)
	return string(b)
}

const cleanProse = "please summarise the quarterly revenue report for the board meeting on thursday and list the open questions "

// TestCleanCacheOneByteChanged: a string found clean and cached, then sent again with one byte
// changed so that it holds a secret or personal data, is redacted, as a whole value and as a
// JSON string leaf whose document is otherwise the same (the resend-history shape).
func TestCleanCacheOneByteChanged(t *testing.T) {
	cache := NewCleanCache(1 << 20)
	r := newTest(t, Config{CleanCache: cache})
	for _, tc := range []struct{ clean, dirty, rule string }{
		{cleanProse + "write to jane.doe example.com", cleanProse + "write to jane.doe@example.com", RuleEmail},
		{cleanProse + "card 4111 1111 1111 111", cleanProse + "card 4111 1111 1111 1111", RuleCreditCard},
		{cleanProse + "key sk-proj Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG", cleanProse + "key sk-proj-Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG", "openai_api_key"},
	} {
		if len(tc.clean) != len(tc.dirty) && len(tc.clean)+1 != len(tc.dirty) {
			t.Fatalf("not one byte apart: %q %q", tc.clean, tc.dirty)
		}
		for _, shape := range []struct {
			name         string
			clean, dirty string
		}{
			{"value", tc.clean, tc.dirty},
			{"leaf", messagesJSON("hello there, an opening message long enough to be cached by itself ok", tc.clean),
				messagesJSON("hello there, an opening message long enough to be cached by itself ok", tc.dirty)},
		} {
			for range 2 { // the second time from the cache
				if out, fs, _ := r.RedactValue("gen_ai.input.messages", shape.clean); len(fs) != 0 || out != shape.clean {
					t.Fatalf("%s %s: clean text has findings %v", tc.rule, shape.name, fs)
				}
			}
			out, fs, _ := r.RedactValue("gen_ai.input.messages", shape.dirty)
			if len(fs) != 1 || fs[0].Rule != tc.rule || out == shape.dirty {
				t.Fatalf("%s %s: one byte changed: findings %+v, output %q", tc.rule, shape.name, fs, out)
			}
		}
	}
	if st := cache.Stats(); st.Hits == 0 || st.Entries == 0 {
		t.Fatalf("cache not used: %+v", st)
	}
}

// TestCleanCacheRuleSetChange: Redactors of different configurations sharing one cache never
// reuse each other's verdicts: text cached clean with the e-mail rule disabled (or with a custom
// rule absent) is redacted by a Redactor that has the rule.
func TestCleanCacheRuleSetChange(t *testing.T) {
	cache := NewCleanCache(1 << 20)
	text := cleanProse + "write to jane.doe@example.com or quote EMP-123456 in the subject line"
	for _, v := range []string{text, messagesJSON(text)} {
		without := newTest(t, Config{CleanCache: cache, Disabled: []string{RuleEmail}})
		for range 2 {
			if _, fs, _ := without.RedactValue("gen_ai.input.messages", v); len(fs) != 0 {
				t.Fatalf("e-mail rule disabled, yet findings %+v", fs)
			}
		}
		hits := cache.Stats().Hits
		with := newTest(t, Config{CleanCache: cache})
		if _, fs, _ := with.RedactValue("gen_ai.input.messages", v); len(fs) != 1 || fs[0].Rule != RuleEmail {
			t.Fatalf("default rules after a cached clean verdict without the e-mail rule: %+v", fs)
		}
		custom := newTest(t, Config{CleanCache: cache, Disabled: []string{RuleEmail},
			Custom: []CustomRule{{Name: "employee_id", Regex: `EMP-(?P<value>\d{6})`, Keywords: []string{"EMP-"}}}})
		if _, fs, _ := custom.RedactValue("gen_ai.input.messages", v); len(fs) != 1 || fs[0].Rule != "employee_id" {
			t.Fatalf("custom rule added: %+v", fs)
		}
		if got := cache.Stats().Hits; got != hits {
			t.Fatalf("another configuration hit %d cached verdicts", got-hits)
		}
	}
}

// TestCleanCacheKeyed: a value cached clean under one attribute key is examined again under a
// credential key (where the whole value is the finding).
func TestCleanCacheKeyed(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	v := "Zq8vR2mN5xW1kT7pL3sF9hJ4dG6bC0yAeQ1wE3rT5yU7iO9pZq8vR2mN5xW1kT7pL3sF9hJ4dG6bC0yA"
	for range 2 {
		if _, fs, _ := r.RedactValue("gen_ai.tool.call.result", v); len(fs) != 0 {
			t.Fatalf("findings under a plain key: %+v", fs)
		}
	}
	if _, fs, _ := r.RedactValue("api_key", v); len(fs) != 1 {
		t.Fatalf("under api_key: %+v", fs)
	}
	doc := `{"query":"` + v + `","api_key":"` + v + `"}`
	if out, fs, _ := r.RedactValue("gen_ai.tool.call.arguments", doc); len(fs) != 1 || strings.Count(out, v) != 1 {
		t.Fatalf("JSON leaf under api_key after the same text cached clean under query: %+v %s", fs, out)
	}
}

// TestCleanCacheMalformedCountedEachTime: a value that looks like JSON but does not parse is
// reported malformed every time (never cached).
func TestCleanCacheMalformedCountedEachTime(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	v := `[{"role":"user","content":"` + cleanProse + `"`
	for i := range 3 {
		if _, _, bad := r.RedactValue("gen_ai.input.messages", v); !bad {
			t.Fatalf("call %d: not reported malformed", i)
		}
	}
}

// TestCleanCacheBounded: the cache holds at most its byte bound's entries.
func TestCleanCacheBounded(t *testing.T) {
	cache := NewCleanCache(10 * CleanCacheEntryBytes)
	r := newTest(t, Config{CleanCache: cache})
	for i := range 100 {
		r.RedactValue("k", fmt.Sprintf("%s number %d", cleanProse, i))
	}
	if st := cache.Stats(); st.Entries != 10 || st.Capacity != 10 || st.Misses != 100 {
		t.Fatalf("stats %+v, want 10 entries of 10 and 100 misses", st)
	}
	if NewCleanCache(0) != nil || NewCleanCache(0).Stats() != (CleanCacheStats{}) {
		t.Fatal("a zero bound must give no cache")
	}
}

// TestCleanCacheEntryBytes: CleanCacheEntryBytes is at least the heap one entry takes, so that
// a byte bound is kept.
func TestCleanCacheEntryBytes(t *testing.T) {
	const n = 100_000
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cache := NewCleanCache(n * CleanCacheEntryBytes)
	r := newTest(t, Config{CleanCache: cache})
	seed := r.cleanSeed(kindValue)
	for i := range n {
		h, _ := r.cleanLookup(fmt.Sprint(i), seed)
		r.cleanAdd(h)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := float64(m1.HeapAlloc-m0.HeapAlloc) / n
	t.Logf("%.1f bytes per entry (heap, Redactor included)", per)
	if cache.Stats().Entries != n {
		t.Fatalf("%d entries", cache.Stats().Entries)
	}
	if per > CleanCacheEntryBytes {
		t.Fatalf("%.1f bytes per entry, CleanCacheEntryBytes is %d", per, CleanCacheEntryBytes)
	}
	runtime.KeepAlive(r)
}

// TestCleanCacheMatchesUncached: with a cache, every corpus file (as a value, as the text of a
// message, and in a growing conversation that resends its history) is redacted exactly as
// without one, on first sight and from the cache.
func TestCleanCacheMatchesUncached(t *testing.T) {
	uncached := newTest(t, Config{})
	cache := NewCleanCache(64 << 20)
	cached := newTest(t, Config{CleanCache: cache})
	files := corpus.Walk(t, "", func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Size() < 1<<20 && !strings.HasSuffix(p, ".gz") && !strings.HasSuffix(p, ".zst")
	})
	if len(files) < 100 {
		t.Fatalf("%d corpus files", len(files))
	}
	var history []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		vals := []string{s}
		if len(s) < 16<<10 {
			vals = append(vals, wrapMessages(s)...)
		}
		if len(s) < 4<<10 {
			history = append(history, s)
			if len(history) > 8 {
				history = history[1:]
			}
			vals = append(vals, messagesJSON(history...))
		}
		for i, v := range vals {
			// the second call may answer from the cache
			sameResults(t, uncached, cached, fmt.Sprintf("%s (%d)", f, i), "gen_ai.input.messages", v, 2)
		}
	}
	for _, s := range jsonWalkSeeds {
		sameResults(t, uncached, cached, s, "gen_ai.input.messages", s, 2)
	}
	st := cache.Stats()
	t.Logf("cache: %+v", st)
	if st.Hits == 0 {
		t.Fatal("no cache hits")
	}
}

// FuzzCleanCacheMatchesUncached is TestCleanCacheMatchesUncached on fuzzed input: the value, then
// the value with its middle byte changed, and (for an array) the array resent with more elements,
// redacted with a warm cache as without one.
func FuzzCleanCacheMatchesUncached(f *testing.F) {
	for _, s := range jsonWalkSeeds {
		f.Add(s)
	}
	f.Add(messagesJSON(cleanProse+"write to jane.doe example.com", cleanProse+"card 4111 1111 1111 111"))
	for _, c := range historyCalls(6) {
		f.Add(c)
	}
	for _, c := range escapedCases {
		f.Add(`"` + c.body + `"`)
	}
	uncached, err := New(Config{HashKey: []byte("k")})
	if err != nil {
		f.Fatal(err)
	}
	cached, err := New(Config{HashKey: []byte("k"), CleanCache: NewCleanCache(1 << 20)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameResults(t, uncached, cached, "fuzz", "gen_ai.input.messages", s, 2)
		if len(s) > 0 {
			b := []byte(s)
			b[len(b)/2] ^= 0x21
			sameResults(t, uncached, cached, "fuzz, one byte changed", "gen_ai.input.messages", string(b), 2)
		}
		// a tool's result, then resent as a leaf of the next call's history (findSharing)
		if !strings.ContainsAny(s, "\"\\") {
			q := `"` + s + `"`
			sameResults(t, uncached, cached, "fuzz, as a tool result", "gen_ai.tool.call.result", q, 1)
			sameResults(t, uncached, cached, "fuzz, tool result resent", "gen_ai.input.messages", toolResponseJSON(q), 2)
		}
		// the same as a JSON string literal with escapes (redactLiteral), then resent
		if utf8.ValidString(s) && len(s) > 0 {
			b, _ := json.Marshal(s)
			q := string(b)
			sameResults(t, uncached, cached, "fuzz, escaped tool result", "gen_ai.tool.call.result", q, 2)
			sameResults(t, uncached, cached, "fuzz, escaped tool result resent", "gen_ai.input.messages", toolResponseJSON(q), 2)
		}
		// an array resent with one more element (the next call's history): runs and head entries
		if tr := strings.TrimRight(s, " \t\r\n"); strings.HasSuffix(tr, "]") {
			next := tr[:len(tr)-1] + `,{"role":"user","content":"` + cleanProse + `mail jane.doe@example.com"}]`
			sameResults(t, uncached, cached, "fuzz, resent with one more element", "gen_ai.input.messages", next, 2)
			sameResults(t, uncached, cached, "fuzz, resent again", "gen_ai.input.messages", next[:len(next)-1]+`,"x"]`, 2)
		}
	})
}

// TestCleanCacheLeafEdits: a resent message with findings is redacted from the cache (a hit, the
// same output and findings), holding no redacted value; the cache keeps its byte bound when
// edits fill it.
func TestCleanCacheLeafEdits(t *testing.T) {
	cache := NewCleanCache(64 * CleanCacheEntryBytes)
	r := newTest(t, Config{CleanCache: cache})
	uncached := newTest(t, Config{})
	email := "jane.doe@example.com"
	msg := cleanProse + "write to " + email + " or call +44 20 7946 0958 before friday"
	v1 := messagesJSON(msg)
	v2 := messagesJSON(msg, cleanProse+"and then the next question follows here")
	sameResults(t, uncached, r, "first", "gen_ai.input.messages", v1, 1)
	hits := cache.Stats().Hits
	sameResults(t, uncached, r, "resent", "gen_ai.input.messages", v2, 1)
	if cache.Stats().Hits <= hits {
		t.Fatal("the resent message was not found in the cache")
	}
	for _, k := range cache.lru.Keys() {
		if e, _ := cache.lru.Peek(k); e != nil {
			for _, ed := range e.edits {
				if strings.Contains(ed.repl, email) || strings.Contains(ed.repl, "7946") {
					t.Fatalf("a cached edit holds the value: %q", ed.repl)
				}
			}
		}
	}
	for i := range 200 {
		v := messagesJSON(fmt.Sprintf("%s mail user%d@example.com and card 4111 1111 1111 1111", cleanProse, i))
		sameResults(t, uncached, r, "fill", "gen_ai.input.messages", v, 1)
		if used := cache.editBytes.Load() + int64(cache.lru.Len())*CleanCacheEntryBytes; used > 64*CleanCacheEntryBytes {
			t.Fatalf("after %d values the cache holds %d bytes, bound %d", i, used, 64*CleanCacheEntryBytes)
		}
	}
}

// TestWalkerKeyMemoNested: keys of JSON documents held in strings live in reused buffers; the
// memo of which keys are credential keys must not answer for a key whose bytes a later
// document wrote where an earlier key was ("content" then "api_key" at the same place).
func TestWalkerKeyMemoNested(t *testing.T) {
	r := newTest(t, Config{})
	secret := "Zq8vR2mN5xW1kT7pL3sF9hJ4dG6bC0yA"
	inner1, _ := json.Marshal(map[string]string{"content": "hello there"})
	inner2, _ := json.Marshal(map[string]string{"api_key": secret})
	doc, _ := json.Marshal([]map[string]string{{"arguments": string(inner1)}, {"arguments": string(inner2)}})
	out, fs, _ := r.RedactValue("gen_ai.input.messages", string(doc))
	if strings.Contains(out, secret) || len(fs) != 1 {
		t.Fatalf("the api_key of the second nested document was not redacted: %d findings, %s", len(fs), out)
	}
}

// TestCleanCacheEditsCountedOnce: two walks that miss on the same leaf at once both add its edits;
// the bytes are counted once (golang-lru replaces an existing key without its eviction callback,
// so a second count would never be subtracted and would slowly turn the cache off).
func TestCleanCacheEditsCountedOnce(t *testing.T) {
	cache := NewCleanCache(64 * CleanCacheEntryBytes)
	r := newTest(t, Config{CleanCache: cache})
	h := xxh3.Hash128([]byte("a leaf with findings"))
	es := []edit{{start: 10, end: 30, repl: "<EMAIL:0123abcd>", f: Finding{Rule: "email"}}}
	r.editsAdd(h, es, 0)
	once := cache.editBytes.Load()
	r.editsAdd(h, es, 0)
	if got := cache.editBytes.Load(); got != once || once == 0 {
		t.Fatalf("edit bytes after adding the same leaf twice: %d, after once: %d", got, once)
	}
	cache.lru.Purge()
	if got := cache.editBytes.Load(); got != 0 {
		t.Fatalf("edit bytes after purging the cache: %d, want 0", got)
	}
}
