// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"github.com/sergi/go-diff/diffmatchpatch"
)

// alignOp is one entry of an alignment: an index into A, into B, or both (-1 when absent).
type alignOp struct{ a, b int }

// align aligns two sequences of keys with the Myers O(ND) difference algorithm (go-diff's
// diffmatchpatch, https://github.com/sergi/go-diff, no time limit so results are
// deterministic): each distinct key is mapped to one rune and the rune strings are diffed.
// Runs of deletions and insertions between common keys are then paired by weak keys (a second
// Myers pass, when weakA/weakB are given) or, without weak keys, position by position.
func align(keysA, keysB, weakA, weakB []string) []alignOp {
	ops := myers(keysA, keysB)
	var out []alignOp
	var delA, insB []int
	flush := func() {
		if len(delA) == 0 && len(insB) == 0 {
			return
		}
		if weakA != nil {
			wa := make([]string, len(delA))
			for i, x := range delA {
				wa[i] = weakA[x]
			}
			wb := make([]string, len(insB))
			for i, x := range insB {
				wb[i] = weakB[x]
			}
			for _, o := range myers(wa, wb) {
				n := alignOp{a: -1, b: -1}
				if o.a >= 0 {
					n.a = delA[o.a]
				}
				if o.b >= 0 {
					n.b = insB[o.b]
				}
				out = append(out, n)
			}
		} else {
			n := max(len(delA), len(insB))
			for i := 0; i < n; i++ {
				o := alignOp{a: -1, b: -1}
				if i < len(delA) {
					o.a = delA[i]
				}
				if i < len(insB) {
					o.b = insB[i]
				}
				out = append(out, o)
			}
		}
		delA, insB = nil, nil
	}
	for _, o := range ops {
		switch {
		case o.a >= 0 && o.b >= 0:
			flush()
			out = append(out, o)
		case o.a >= 0:
			delA = append(delA, o.a)
		default:
			insB = append(insB, o.b)
		}
	}
	flush()
	return out
}

// myers returns the shortest edit script between a and b as aligned pairs (equal keys) and
// single-sided entries, in order; deletions before insertions within a change.
func myers(a, b []string) []alignOp {
	ids := map[string]rune{}
	enc := func(keys []string) []rune {
		rs := make([]rune, len(keys))
		for i, k := range keys {
			r, ok := ids[k]
			if !ok {
				r = keyRune(len(ids))
				ids[k] = r
			}
			rs[i] = r
		}
		return rs
	}
	ra, rb := enc(a), enc(b)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	var out []alignOp
	i, j := 0, 0
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := len([]rune(d.Text))
		for k := 0; k < n; k++ {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				out = append(out, alignOp{a: i, b: j})
				i++
				j++
			case diffmatchpatch.DiffDelete:
				out = append(out, alignOp{a: i, b: -1})
				i++
			case diffmatchpatch.DiffInsert:
				out = append(out, alignOp{a: -1, b: j})
				j++
			}
		}
	}
	return out
}

// keyRune maps the n-th distinct key to a valid Unicode scalar (diffmatchpatch returns text as
// Go strings, so surrogates must be skipped).
func keyRune(n int) rune {
	r := rune(0x100 + n)
	if r >= 0xD800 {
		r += 0x800
	}
	return r
}

// lineDiff is a line-by-line diff of two texts (diffmatchpatch's line mode: Myers over lines).
func lineDiff(a, b string) []TextLine {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	ca, cb, lines := dmp.DiffLinesToRunes(ensureNL(a), ensureNL(b))
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(ca, cb, false), lines)
	var out []TextLine
	for _, d := range diffs {
		op := " "
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = "-"
		case diffmatchpatch.DiffInsert:
			op = "+"
		}
		text := d.Text
		if len(text) > 0 && text[len(text)-1] == '\n' {
			text = text[:len(text)-1]
		}
		for _, l := range splitLines(text) {
			out = append(out, TextLine{Op: op, Text: l})
		}
	}
	return out
}

func ensureNL(s string) string {
	if s == "" || s[len(s)-1] == '\n' {
		return s
	}
	return s + "\n"
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
