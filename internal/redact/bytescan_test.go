// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"net/netip"
	"strings"
	"testing"
)

// scanDigitClustersRef is scanDigitClusters as it was before nextDigit (one byte at a time), kept
// on purpose as a copy: it is FuzzByteScan's oracle (the fast scan must report exactly what it
// does) and BenchmarkByteScan's baseline. It differs from scanDigitClusters only in how it skips
// to the next digit; a change to the cluster rules must be made in both.
func scanDigitClustersRef(s string, f func(lo, hi, digits int, dot bool)) {
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c < '0' || c > '9' {
			i++
			continue
		}
		lo, digits, j, last := i, 0, i, i
		gap := 0
		dot := false
		decimal := false
		afterDot := -1
		for j < n {
			c := s[j]
			if c >= '0' && c <= '9' {
				digits++
				gap = 0
				last = j + 1
				if afterDot >= 0 {
					afterDot++
					if afterDot >= 5 {
						decimal = true
					}
				}
			} else if c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '+' {
				dot = dot || c == '.'
				afterDot = -1
				if c == '.' && j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
					afterDot = 0
				}
				gap++
				if gap > 2 {
					break
				}
			} else {
				break
			}
			j++
		}
		if digits >= 4 && !decimal {
			f(lo, last, digits, dot)
		}
		i = max(j, i+1)
	}
}

// scanIPv6Ref is scanIPv6 as it was before nextColon (one byte at a time), kept on purpose as a
// copy for the same two uses as scanDigitClustersRef: oracle and benchmark baseline. It differs
// from scanIPv6 only in how it skips to the next ':'.
func scanIPv6Ref(s string, f func(lo, hi int)) {
	n := len(s)
	for i := 0; i < n; i++ {
		if s[i] != ':' {
			continue
		}
		if !(i+1 < n && (isHex(s[i+1]) || s[i+1] == ':')) {
			continue
		}
		lo := i
		for lo > 0 && (isHex(s[lo-1]) || s[lo-1] == ':' || s[lo-1] == '.') && i-lo < 45 {
			lo--
		}
		hi := i + 1
		colons := 1
		for hi < n && (isHex(s[hi]) || s[hi] == ':' || s[hi] == '.') && hi-lo < 45 {
			if s[hi] == ':' {
				colons++
			}
			hi++
		}
		for j := lo; j < i; j++ {
			if s[j] == ':' {
				colons++
			}
		}
		if colons >= 2 {
			for hi > lo && s[hi-1] == '.' {
				hi--
			}
			boundary := (lo == 0 || !isTokenByte(s[lo-1]) || s[lo-1] == '.') && (hi == n || !isAlnum(s[hi]))
			if boundary {
				if a, err := netip.ParseAddr(s[lo:hi]); err == nil && a.Is6() && !a.IsLoopback() && !a.IsUnspecified() {
					f(lo, hi)
				}
			}
		}
		i = hi
	}
}

type span3 struct{ lo, hi, digits int }

func clusters(scan func(string, func(int, int, int, bool)), s string) []span3 {
	var out []span3
	scan(s, func(lo, hi, d int, dot bool) {
		if dot {
			d = -d
		}
		out = append(out, span3{lo, hi, d})
	})
	return out
}

func ipv6Cands(scan func(string, func(int, int)), s string) [][2]int {
	var out [][2]int
	scan(s, func(lo, hi int) { out = append(out, [2]int{lo, hi}) })
	return out
}

// FuzzByteScan: the word-at-a-time digit scan and the IndexByte colon scan report exactly what the
// byte-at-a-time scans did, and the word-at-a-time lower-casing and JSON body test give what a
// byte loop gives, on any input.
func FuzzByteScan(f *testing.F) {
	for _, s := range []string{"", "call +44 20 7946 0958 now", "4111 1111 1111 1111", "0.7750023603439331",
		"fe80::1 2001:db8::8a2e:370:7334 ::", "a1b2c3d4e5f6g7h8i9j0", strings.Repeat("x", 17) + "12345678" + "\xff\x80",
		"conv_9f6067c4caa7a19a9c8939024892e324", "::::::", "1.2.3.4:8080", "ABCDEFGHIJKLMNOPQRSTUVWXYZ@[`{\x80\xc1Z",
		"plain text of sixteen bytes", "quote\" here and more", "tab\tin it", "back\\slash long enough"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := clusters(scanDigitClusters, s), clusters(scanDigitClustersRef, s)
		if len(got) != len(want) {
			t.Fatalf("digit clusters of %q: %v, want %v", s, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("digit clusters of %q: %v, want %v", s, got, want)
			}
		}
		g6, w6 := ipv6Cands(scanIPv6, s), ipv6Cands(scanIPv6Ref, s)
		if len(g6) != len(w6) {
			t.Fatalf("ipv6 candidates of %q: %v, want %v", s, g6, w6)
		}
		for i := range g6 {
			if g6[i] != w6[i] {
				t.Fatalf("ipv6 candidates of %q: %v, want %v", s, g6, w6)
			}
		}
		plain := true
		lower := []byte(s)
		for i, c := range lower {
			plain = plain && c >= 0x20 && c != '"' && c != '\\'
			if c >= 'A' && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		if got := plainJSONBody(s); got != plain {
			t.Fatalf("plainJSONBody(%q) = %v, want %v", s, got, plain)
		}
		if got := appendLowerASCII([]byte("x"), []byte(s)); string(got) != "x"+string(lower) {
			t.Fatalf("appendLowerASCII(%q) = %q, want %q", s, got[1:], lower)
		}
		for i := 0; i <= len(s); i++ {
			j := nextDigit(s, i)
			k := i
			for k < len(s) && (s[k] < '0' || s[k] > '9') {
				k++
			}
			if j != k {
				t.Fatalf("nextDigit(%q, %d) = %d, want %d", s, i, j, k)
			}
		}
	})
}

// BenchmarkByteScan compares the digit and colon scans with the byte-at-a-time ones on loadgen
// prose (no digits) and on digit-heavy text, in the same run.
//
//	go test -run '^$' -bench ByteScan ./internal/redact/
func BenchmarkByteScan(b *testing.B) {
	var prose string
	for _, sp := range loadgenSpans(3) {
		for _, kv := range sp {
			if kv.key == "gen_ai.tool.call.result" && len(kv.value) > 400 && prose == "" {
				prose = kv.value
			}
		}
	}
	digits := strings.Repeat("order 12345 at 10.0.0.1, call +44 20 7946 0958; ", 10)
	for _, tc := range []struct{ name, s string }{{"prose", prose}, {"digits", digits}} {
		b.Run("digits/"+tc.name+"/bytewise", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				scanDigitClustersRef(tc.s, func(int, int, int, bool) {})
			}
		})
		b.Run("digits/"+tc.name+"/swar", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				scanDigitClusters(tc.s, func(int, int, int, bool) {})
			}
		})
		b.Run("ipv6/"+tc.name+"/bytewise", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				scanIPv6Ref(tc.s, func(int, int) {})
			}
		})
		b.Run("ipv6/"+tc.name+"/indexbyte", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				scanIPv6(tc.s, func(int, int) {})
			}
		})
	}
}
