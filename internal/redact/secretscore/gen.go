// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
)

// generate returns a string matching the RE2 pattern, drawn with rng: each repetition takes a
// count between its bounds (unbounded ones at most 8 beyond the minimum), each alternation and
// character class a random choice; case-folded literals keep their written case.
func generate(pattern string, rng *rand.Rand) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("NewSecret(%q): %w", pattern, err)
	}
	var sb strings.Builder
	gen(&sb, re.Simplify(), rng)
	return sb.String(), nil
}

func gen(sb *strings.Builder, re *syntax.Regexp, rng *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		sb.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		sb.WriteRune(pickRune(re.Rune, rng))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)])
	case syntax.OpCapture:
		gen(sb, re.Sub[0], rng)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			gen(sb, s, rng)
		}
	case syntax.OpAlternate:
		gen(sb, re.Sub[rng.IntN(len(re.Sub))], rng)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 0
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, 8
		case syntax.OpPlus:
			lo, hi = 1, 9
		case syntax.OpQuest:
			lo, hi = 0, 1
		default:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 8
			}
		}
		n := lo
		if hi > lo {
			n += rng.IntN(hi - lo + 1)
		}
		for range n {
			gen(sb, re.Sub[0], rng)
		}
	}
}

func pickRune(ranges []rune, rng *rand.Rand) rune {
	total := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		hi := min(ranges[i+1], 0x7e) // printable ASCII is enough for credentials
		if hi >= ranges[i] {
			total += int(hi-ranges[i]) + 1
		}
	}
	if total == 0 {
		return 'a'
	}
	k := rng.IntN(total)
	for i := 0; i+1 < len(ranges); i += 2 {
		hi := min(ranges[i+1], 0x7e)
		if hi < ranges[i] {
			continue
		}
		n := int(hi-ranges[i]) + 1
		if k < n {
			return ranges[i] + rune(k)
		}
		k -= n
	}
	return 'a'
}
