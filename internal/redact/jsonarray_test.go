// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"fmt"
	"strings"
	"testing"
)

// historyCalls returns the gen_ai.input.messages values of one conversation that resends its
// history, n calls long: call i holds messages 0..i (plus, every third call, a second new
// message), some of them with planted findings.
func historyCalls(n int) []string {
	var texts []string
	var calls []string
	for i := range n {
		t := fmt.Sprintf("%s turn %d", cleanProse, i)
		switch i % 5 {
		case 1:
			t += " write to jane.doe" + fmt.Sprint(i) + "@example.com please"
		case 3:
			t += " card 4111 1111 1111 1111 and key sk-proj-Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG"
		}
		texts = append(texts, t)
		if i%3 == 2 {
			texts = append(texts, fmt.Sprintf("tool result %d: %s", i, cleanProse))
		}
		calls = append(calls, messagesJSON(texts...))
	}
	return calls
}

// TestArrayRunsMatchUncached: a conversation that resends its history is redacted with the run
// and element verdicts exactly as without a cache and as with the leaf-by-leaf cache, on first
// sight and from the cache; the history of the call before is found whole (one hit per call,
// not one per message).
func TestArrayRunsMatchUncached(t *testing.T) {
	uncached := newTest(t, Config{})
	leaf := newTest(t, Config{CleanCache: NewCleanCache(8 << 20)})
	leaf.legacyScan = true
	cache := NewCleanCache(8 << 20)
	r := newTest(t, Config{CleanCache: cache})
	calls := historyCalls(24)
	for i, v := range calls {
		sameResults(t, uncached, r, fmt.Sprintf("call %d", i), "gen_ai.input.messages", v, 2)
		sameResults(t, leaf, r, fmt.Sprintf("call %d, leaf cache", i), "gen_ai.input.messages", v, 1)
	}
	// a later call, from a cache that knows every history before it: the known run is looked up
	// whole, so the lookups do not grow with the number of messages
	before := cache.Stats()
	next := historyCalls(25)[24]
	sameResults(t, uncached, r, "call 24", "gen_ai.input.messages", next, 1)
	after := cache.Stats()
	if n := (after.Hits + after.Misses) - (before.Hits + before.Misses); n > 2*maxRunProbe+4 {
		t.Fatalf("a call resending 30 known messages took %d lookups", n)
	}
	if after.Hits == before.Hits {
		t.Fatal("the resent history was not found in the cache")
	}
}

// TestArrayRunOneByteChanged: a cached history (a run of elements) sent again with one byte of an
// earlier message changed so that it holds a finding is redacted: no verdict of the run or of
// the message answers for the changed bytes.
func TestArrayRunOneByteChanged(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(8 << 20)})
	uncached := newTest(t, Config{})
	texts := []string{cleanProse + "one", cleanProse + "write to jane.doe example.com", cleanProse + "three", cleanProse + "four"}
	for n := 1; n <= len(texts); n++ {
		sameResults(t, uncached, r, fmt.Sprintf("%d messages", n), "gen_ai.input.messages", messagesJSON(texts[:n]...), 2)
	}
	changed := append([]string(nil), texts...)
	changed[1] = cleanProse + "write to jane.doe@example.com"
	for n := 2; n <= len(texts); n++ {
		for _, msgs := range [][]string{changed[:n], append(append([]string(nil), changed[:n]...), cleanProse+"five")} {
			v := messagesJSON(msgs...)
			out, fs, _ := r.RedactValue("gen_ai.input.messages", v)
			if len(fs) != 1 || fs[0].Rule != RuleEmail || strings.Contains(out, "jane.doe@example.com") {
				t.Fatalf("%d messages, the second changed to hold an e-mail address: findings %+v", len(msgs), fs)
			}
			sameResults(t, uncached, r, fmt.Sprintf("changed, %d messages", len(msgs)), "gen_ai.input.messages", v, 1)
		}
	}
}

// TestArrayEditsMalformed: arrays whose framing or elements do not parse are reported malformed
// and redacted as text, as without a cache, also when their elements were cached from a valid
// array before; deep nesting, empty arrays and scalars take the token walk with the same result.
func TestArrayEditsMalformed(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(8 << 20)})
	uncached := newTest(t, Config{})
	m1 := `{"role":"user","parts":[{"type":"text","content":"` + cleanProse + `mail jane.doe@example.com"}]}`
	m2 := `{"role":"assistant","parts":[{"type":"text","content":"` + cleanProse + `noted"}]}`
	sameResults(t, uncached, r, "valid", "gen_ai.input.messages", "["+m1+","+m2+"]", 2)
	deep := strings.Repeat("[", maxElemDepth+2) + `"` + cleanProse + `jane.doe@example.com"` + strings.Repeat("]", maxElemDepth+2)
	for i, v := range []string{
		"[" + m1 + "," + m2 + ",]",      // trailing comma
		"[" + m1 + " " + m2 + "]",       // no comma
		"[" + m1 + "," + m2,             // unterminated
		"[" + m1 + "," + m2 + "]x",      // data after the array
		"[" + m1 + "," + m2 + "]]",      // a closing bracket too many
		"[" + m1 + ",]" + m2 + "]",      // a closing bracket inside
		"[" + m1 + "," + m2[:40] + "]",  // a cut element
		"[" + m1 + `,{"a":tru}]`,        // a bad literal in a new element
		"[" + m1 + `,{"a" "b"}]`,        // a bad element the framing does not see
		"[" + m1 + `,"` + m2 + `]`,      // a string left open
		" [ " + m1 + " , " + m2 + " ] ", // white space: valid
		"[]", "[ ]", `[1, 2.5e3, null, true, "x"]`, `[[` + m1 + `],[` + m2 + `]]`,
		deep, deep[1:],
	} {
		sameResults(t, uncached, r, fmt.Sprintf("case %d", i), "gen_ai.input.messages", v, 2)
	}
}

// TestShortDigitValuesCached: a value shorter than MinCleanCacheLen whose digits make the digit
// rules run (a model name with a date, an id) is cached when clean, and answered from the cache
// under the same key; a short value with a finding is examined every time.
func TestShortDigitValuesCached(t *testing.T) {
	cache := NewCleanCache(1 << 20)
	r := newTest(t, Config{CleanCache: cache})
	uncached := newTest(t, Config{})
	for _, v := range []string{"gpt-4o-2024-08-06", "conv_9f6067c4caa7a19a9c8939024892e324"} {
		if !r.digitGated(v) {
			t.Fatalf("%q: no digit rule would run", v)
		}
		sameResults(t, uncached, r, v, "gen_ai.response.model", v, 1)
		hits := cache.Stats().Hits
		sameResults(t, uncached, r, v, "gen_ai.response.model", v, 1)
		if cache.Stats().Hits != hits+1 {
			t.Fatalf("%q: the second call was not answered from the cache", v)
		}
	}
	if r.digitGated("chat gpt-4o") || r.digitGated("call_12") {
		t.Fatal("a value without a gated digit cluster is looked up")
	}
	phone := "call +44 20 7946 0958"
	for i := range 3 {
		if out, fs, _ := r.RedactValue("gen_ai.response.id", phone); len(fs) != 1 || out == phone {
			t.Fatalf("call %d: a short value with a phone number: %+v", i, fs)
		}
	}
	// one digit changed so that the value holds a card number
	clean, dirty := "card 4111 1111 1111 1112", "card 4111 1111 1111 1111"
	sameResults(t, uncached, r, "clean card-like", "k", clean, 2)
	if _, fs, _ := r.RedactValue("k", dirty); len(fs) != 1 || fs[0].Rule != RuleCreditCard {
		t.Fatalf("one digit changed: %+v", fs)
	}
}

// TestKeyAppliesMemo: the one memo of keyApplies answers as sensitiveKey does, for keys seen
// once, twice and past its bound, and stays bounded.
func TestKeyAppliesMemo(t *testing.T) {
	r := newTest(t, Config{})
	want := func(k string) bool { name, _, ok := sensitiveKey(k); return ok && r.keyRuleOn[name] }
	keys := []string{"api_key", "content", "Authorization", "role", "x-api-key", "parts", "password", "token"}
	for i := range 3 * maxKeyMemo {
		keys = append(keys, fmt.Sprintf("field_%d", i), fmt.Sprintf("secret_token_%d", i))
	}
	for round := range 2 {
		for _, k := range keys {
			if got := r.keyApplies(k); got != want(k) {
				t.Fatalf("round %d: keyApplies(%q) = %v, sensitiveKey says %v", round, k, got, want(k))
			}
		}
	}
	if !r.keyApplies("api_key") || r.keyApplies("content") {
		t.Fatal("api_key must apply and content must not")
	}
	if m := r.keyMemo.Load(); m == nil || len(*m) > maxKeyMemo || len(r.keyAll) > maxKeyMemo {
		t.Fatalf("memo not bounded: snapshot %v, all %d", m != nil, len(r.keyAll))
	}
	if _, ok := (*r.keyMemo.Load())["api_key"]; !ok {
		t.Fatal("a key seen twice is not in the snapshot")
	}
}

// TestArrayShortElements: an array with no element long enough to be looked up alone is walked
// whole (see BenchmarkRedactShortElements), with the results of the uncached walk, malformed or
// not; its run is still remembered, so that the array resent (with one more element) hits.
func TestArrayShortElements(t *testing.T) {
	cache := NewCleanCache(8 << 20)
	r := newTest(t, Config{CleanCache: cache})
	uncached := newTest(t, Config{})
	v := `[1, 2.5, "call +44 20 7946 0958", {"a":"jane.doe@example.com"}, null]`
	sameResults(t, uncached, r, "short elements", "tool.result", v, 1)
	hits := cache.Stats().Hits
	sameResults(t, uncached, r, "resent, one more", "tool.result", v[:len(v)-1]+`, true]`, 1)
	if cache.Stats().Hits <= hits {
		t.Fatal("the resent array was not answered from its remembered run")
	}
	for i, bad := range []string{`[1, 2.5, "x" "y"]`, `[1, {"a":tru}, 3]`, `[1, 2,]`} {
		sameResults(t, uncached, r, fmt.Sprintf("malformed %d", i), "tool.result", bad, 2)
	}
}
