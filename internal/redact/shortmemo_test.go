// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
	"testing"
)

// TestShortMemo: short text values found clean twice are answered from shortMemo with what a
// scan gives; a short value with a finding, one under a credential key, JSON and escaped
// literals are never answered from it; without a CleanCache there is no memo.
func TestShortMemo(t *testing.T) {
	uncached := newTest(t, Config{})
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	vals := []struct{ key, s string }{
		{"", "chat gpt-4o"}, {"server.address", "api.openai.com"}, {"gen_ai.provider.name", "openai"},
		{"gen_ai.response.model", "gpt-4o-2024-08-06"},
		{"", "mail jane.doe@example.com"}, {"user", "call +44 20 7946 0958"},
		{"password", "hunter2hunter2X"}, {"authorization", "Bearer abcdef0123456789"},
		{"x", `{"a":"jane@x.com"}`}, {"x", `"jane\u0040x.com"`}, {"x", `[1,`},
	}
	for round := range 4 {
		for _, v := range vals {
			sameResults(t, uncached, r, v.s, v.key, v.s, 1)
			_, clean := r.shortClean(v.s)
			want := round >= 1 && !strings.ContainsAny(v.s, "@+{[\"") && v.key != "password" && v.key != "authorization"
			if clean != want {
				t.Errorf("round %d: %q (key %q) in the memo: %v, want %v", round, v.s, v.key, clean, want)
			}
		}
	}
	// a value one byte away from a memoised one is scanned
	if _, fs := r.RedactKeyed("", "chat gpt-4o@example.com"); len(fs) != 1 {
		t.Errorf("findings %v", fs)
	}
	plain := newTest(t, Config{})
	for range 3 {
		plain.RedactValue("", "chat gpt-4o")
	}
	if n := plain.short.len(); n != 0 {
		t.Errorf("a memo without a CleanCache: %d entries", n)
	}
}

// TestShortMemoBounded: values seen once do not enter the memo, and it holds at most
// shortMemoMax hashes (then starts over).
func TestShortMemoBounded(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	for i := range shortSeenMax * 2 {
		r.RedactValue("id", "resp_"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i))
	}
	if n := r.short.len(); n != 0 {
		t.Fatalf("values seen once entered the memo: %d", n)
	}
	for i := range shortMemoMax + 100 {
		for range 3 {
			r.RedactValue("id", "v"+itoa(i))
		}
		if n := r.short.len(); n == 0 || n > shortMemoMax {
			t.Fatalf("memo not bounded to %d", shortMemoMax)
		}
	}
	if _, clean := r.shortClean("v" + itoa(shortMemoMax+99)); !clean {
		t.Fatal("a value added after the memo started over is not in it")
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			return string(b[n:])
		}
	}
}

// BenchmarkShortMemoFill: distinct short values (per-session ids) each seen three times, with
// the memo and without it (the same-run baseline). Each value's second clean sighting adds it to
// the memo; an addition must cost O(1). With the copied snapshot it replaced, the "memo" row was
// 14,036-15,090 ns/op against "nomemo"'s 111-114 in one run (about 125x); with sync.Map, 99 ns/op
// against 328-334 in the next (-benchtime 30000x -count 2, loaded 2-core machine).
func BenchmarkShortMemoFill(b *testing.B) {
	for _, mode := range []string{"memo", "nomemo"} {
		b.Run(mode, func(b *testing.B) {
			r, err := New(Config{CleanCache: NewCleanCache(1 << 20)})
			if err != nil {
				b.Fatal(err)
			}
			r.noShortMemo = mode == "nomemo"
			vals := make([]string, shortMemoMax)
			for i := range vals {
				vals[i] = "conv_" + itoa(i)
			}
			b.ResetTimer()
			for i := range b.N {
				v := vals[(i/3)%len(vals)]
				r.RedactValue("gen_ai.conversation.id", v)
			}
		})
	}
}
