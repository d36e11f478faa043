// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/coregx/ahocorasick"
)

// Finding is one redacted value: the rule that found it and its byte span [Start, End) in the
// input given to the call that returned it. It never holds the value itself.
type Finding struct {
	Rule     string
	Category Category
	Action   Action
	Start    int
	End      int
}

// Redactor finds and replaces sensitive values. Build it with New; it is safe for concurrent use.
type Redactor struct {
	rules    []*rule
	byName   map[string]*rule
	ac       *ahocorasick.Automaton
	acRules  [][]int // AC pattern id -> rule indexes
	digitIdx []int   // rules triggered by digit clusters
	scanAll  []int   // rules without trigger
	ipv6     int     // index of the scanner-driven IPv6 rule, -1 when off
	shape    int     // index of the scanner-driven prefixed_token rule, -1 when off
	entropy  int     // index of the scanner-driven high_entropy_value rule, -1 when off
	generic  int     // index of the generic_credential rule, -1 when off
	hashKey  []byte
	macPool  sync.Pool
	// scratchPool holds *findScratch
	scratchPool sync.Pool
	keyRuleOn   map[string]bool
	// prefilterOK: no keyword holds a byte that JSON must escape, so RedactJSON's prefilter may
	// look for keywords in raw JSON bytes
	prefilterOK bool
	// cache remembers clean strings (nil: none); cleanBase seeds its hashes: the cache's secret
	// and this Redactor's fingerprint
	cache     *CleanCache
	cleanBase uint64
	// legacyScan turns off what came after the leaf cache (array elements looked up whole, short
	// values with digit clusters cached): set only by tests and benchmarks, to measure the
	// earlier path in the same run
	legacyScan bool
	// minGateDigits is the fewest digits a digit rule's gate accepts (MaxInt without digit rules)
	minGateDigits int
	// lastLazy is the index of the rule whose check resolve runs only on matches that may be
	// kept (see rule.lazyCheck), -1 when none: it must be the last rule in priority.
	lastLazy int
	// keyMemo: an immutable snapshot of keyAll (key -> keyApplies(key), at most maxKeyMemo
	// keys), read without a lock; keyAll is written under keyMu (see keyMemoAdd)
	keyMemo atomic.Pointer[map[string]bool]
	keyMu   sync.Mutex
	keyAll  map[string]bool
	// short: the hashes of short text values found clean more than once (see shortClean);
	// noShortMemo turns it off (set only by benchmarks, for a same-run baseline)
	short       shortMemo
	noShortMemo bool
}

// New compiles cfg into a Redactor. Errors name the configuration field (see Config.Validate).
func New(cfg Config) (*Redactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	piiAction, secretAction := cfg.PIIAction, cfg.SecretAction
	if piiAction == "" {
		piiAction = ActionHash
	}
	if secretAction == "" {
		secretAction = ActionMask
	}
	disabled := map[string]bool{}
	for _, n := range cfg.Disabled {
		disabled[n] = true
	}
	r := &Redactor{byName: map[string]*rule{}, keyRuleOn: map[string]bool{}, ipv6: -1, shape: -1, entropy: -1, generic: -1, prefilterOK: true}
	for _, br := range builtinRules() {
		if disabled[br.name] {
			continue
		}
		r.rules = append(r.rules, br)
	}
	// custom rules go before the PII rules so an operator's rule wins an overlap with a generic one
	firstPII := slices.IndexFunc(r.rules, func(x *rule) bool { return x.cat == CategoryPII })
	if firstPII < 0 {
		firstPII = len(r.rules)
	}
	var customs []*rule
	for _, cr := range cfg.Custom {
		re := regexp.MustCompile(cr.Regex) // validated above
		cat := cr.Category
		if cat == "" {
			cat = CategorySecret
		}
		group := 0
		if i := re.SubexpIndex("value"); i > 0 {
			group = i
		}
		cu := &rule{name: cr.Name, cat: cat, re: re, group: group, keywords: cr.Keywords, scanAll: len(cr.Keywords) == 0,
			before: 64, after: 512, action: cr.Action, check: valueCheck(validators[cr.Validator])}
		customs = append(customs, cu)
	}
	r.rules = slices.Concat(r.rules[:firstPII], customs, r.rules[firstPII:])

	var patterns []string
	patIdx := map[string]int{}
	for i, ru := range r.rules {
		if ru.action == "" {
			ru.action = secretAction
			if ru.cat == CategoryPII {
				ru.action = piiAction
			}
		}
		if a, ok := cfg.RuleActions[ru.name]; ok {
			ru.action = a
		}
		r.byName[ru.name] = ru
		if ru.name == RuleGenericCredential {
			r.generic = i
		}
		if ru.name == RuleEncodedCredential && ru.re == nil {
			ru.scan = r.encodedScan // its own copy (builtinRules): the decoded text is scanned with r's rules
		}
		switch {
		case ru.name == RuleIPv6 && ru.re == nil:
			r.ipv6 = i
		case ru.name == RulePrefixedToken && ru.re == nil:
			r.shape = i
		case ru.name == RuleHighEntropyValue && ru.re == nil:
			r.entropy = i
		case ru.digits:
			r.digitIdx = append(r.digitIdx, i)
		case ru.scanAll:
			r.scanAll = append(r.scanAll, i)
		default:
			seen := map[string]bool{}
			for _, kw := range ru.keywords {
				// the automaton runs over an ASCII-lower-cased copy of the text: keywords match
				// in any case, as gitleaks' keywords do
				kw = strings.ToLower(kw)
				if strings.ContainsFunc(kw, func(c rune) bool { return c < 0x20 || c == '"' || c == '\\' }) {
					r.prefilterOK = false
				}
				if seen[kw] {
					continue
				}
				seen[kw] = true
				id, ok := patIdx[kw]
				if !ok {
					id = len(patterns)
					patIdx[kw] = id
					patterns = append(patterns, kw)
					r.acRules = append(r.acRules, nil)
				}
				r.acRules[id] = append(r.acRules[id], i)
			}
		}
	}
	for _, n := range []string{RuleAuthorization, RuleCookie, RulePasswordKey} {
		r.keyRuleOn[n] = r.byName[n] != nil
	}
	if len(patterns) > 0 {
		ac, err := ahocorasick.NewBuilder().AddStrings(patterns).Build()
		if err != nil {
			return nil, fmt.Errorf("building keyword automaton: %w", err)
		}
		r.ac = ac
	}
	r.lastLazy = -1
	if n := len(r.rules); n > 0 && r.rules[n-1].lazyCheck {
		r.lastLazy = n - 1
	}
	r.minGateDigits = math.MaxInt
	for _, ri := range r.digitIdx {
		r.minGateDigits = min(r.minGateDigits, r.rules[ri].minDigits)
	}
	r.hashKey = cfg.HashKey
	if len(r.hashKey) == 0 {
		r.hashKey = make([]byte, 32)
		if _, err := rand.Read(r.hashKey); err != nil {
			return nil, fmt.Errorf("hash_key: generating a random key: %w", err)
		}
	}
	r.macPool.New = func() any { return hmac.New(sha256.New, r.hashKey) }
	if cfg.CleanCache != nil {
		r.cache = cfg.CleanCache
		r.cleanBase = cfg.CleanCache.seed ^ r.fingerprint(cfg)
	}
	return r, nil
}

// Rules returns the names of the active rules in priority order.
func (r *Redactor) Rules() []string {
	out := make([]string, len(r.rules))
	for i, ru := range r.rules {
		out[i] = ru.name
	}
	return out
}

// CategoryOf returns the category of rule name ("" when the rule is not active).
func (r *Redactor) CategoryOf(name string) Category {
	if ru := r.byName[name]; ru != nil {
		return ru.cat
	}
	return ""
}

// ActionOf returns the action configured for rule name ("" when the rule is not active).
func (r *Redactor) ActionOf(name string) Action {
	if ru := r.byName[name]; ru != nil {
		return ru.action
	}
	return ""
}

type win struct{ lo, hi int }

// findScratch is per-call state of Find's keyword stage, pooled: open windows and the last key
// position per rule, and the rules touched (only those are reset).
type findScratch struct {
	open    []win
	lastKey []int
	touched []int
}

func (r *Redactor) scratch(n int) *findScratch {
	sc, _ := r.scratchPool.Get().(*findScratch)
	if sc == nil || len(sc.open) != n {
		sc = &findScratch{open: make([]win, n), lastKey: make([]int, n)}
		for i := range sc.open {
			sc.open[i] = win{-1, -1}
		}
	}
	return sc
}

func (r *Redactor) release(sc *findScratch) {
	for _, ri := range sc.touched {
		sc.open[ri] = win{-1, -1}
		sc.lastKey[ri] = 0
	}
	sc.touched = sc.touched[:0]
	r.scratchPool.Put(sc)
}

type cand struct {
	prio       int
	start, end int
	// unchecked: the rule's check has not run (lastLazy): [start, end) is the regex match
	unchecked bool
}

// Find returns the non-overlapping findings in s, sorted by Start. Where two rules claim
// overlapping spans the one earlier in Rules() wins.
func (r *Redactor) Find(s string) []Finding {
	return r.find(s, nil, false)
}

// find is Find; with known it uses ms, the keyword matches in s (as the automaton reports them
// over the lower-cased s, in the same order), instead of running the automaton again.
func (r *Redactor) find(s string, ms []ahocorasick.Match, known bool) []Finding {
	var cs []cand
	if r.ac != nil && len(s) > 0 {
		// Windows of one rule that overlap are merged and scanned once, so the regex work stays
		// linear in len(s) however many triggers there are.
		if !known {
			ms = r.keywordMatches(s)
		}
		var sc *findScratch
		if len(ms) > 0 {
			sc = r.scratch(len(r.rules))
		}
		for _, m := range ms {
			open, lastKey := sc.open, sc.lastKey
			for _, ri := range r.acRules[m.PatternID] {
				ru := r.rules[ri]
				if ru.kwBoundary && m.Start > 0 && isAlnum(s[m.Start-1]) && (ru.kwGlued == nil || !ru.kwGlued(s, m.Start)) {
					continue // inside a word ("task-", "laws")
				}
				if ru.scan != nil {
					if lo, hi, ok := ru.scan(s, m.Start, m.End); ok {
						cs = append(cs, cand{prio: ri, start: lo, end: hi})
					}
					continue
				}
				if ru.narrow != nil {
					// one window per key, starting at the key: its first match is the key's value
					lo, hi, ok := ru.narrow(s, m.Start, m.End)
					if ok && lo+1 != lastKey[ri] {
						if lastKey[ri] == 0 {
							sc.touched = append(sc.touched, ri)
						}
						lastKey[ri] = lo + 1
						cs = r.runRule(cs, s, ri, lo, hi)
					}
					continue
				}
				lo, hi := window(s, m.Start-ru.before, m.End+ru.after, 256)
				w := &open[ri]
				if w.lo < 0 && w.hi < 0 {
					sc.touched = append(sc.touched, ri)
				}
				switch {
				case w.lo < 0:
					*w = win{lo, hi}
				case lo <= w.hi && hi >= w.lo:
					w.lo, w.hi = min(w.lo, lo), max(w.hi, hi)
				default:
					cs = r.runRule(cs, s, ri, w.lo, w.hi)
					*w = win{lo, hi}
				}
			}
		}
		if sc != nil {
			for _, ri := range sc.touched {
				if w := sc.open[ri]; w.lo >= 0 {
					cs = r.runRule(cs, s, ri, w.lo, w.hi)
				}
			}
			r.release(sc)
		}
	}
	for _, ri := range r.scanAll {
		cs = r.runRule(cs, s, ri, 0, len(s))
	}
	if len(r.digitIdx) > 0 {
		scanDigitClusters(s, func(lo, hi, digits int, dot bool) {
			for _, ri := range r.digitIdx {
				ru := r.rules[ri]
				if digits < ru.minDigits || (ru.needDot && !dot) {
					continue
				}
				wlo, whi := window(s, lo-ru.before, hi+ru.after, 24)
				cs = r.runRule(cs, s, ri, wlo, whi)
			}
		})
	}
	if r.ipv6 >= 0 {
		scanIPv6(s, func(lo, hi int) { cs = append(cs, cand{prio: r.ipv6, start: lo, end: hi}) })
	}
	if r.shape >= 0 {
		add := func(lo, hi int) { cs = append(cs, cand{prio: r.shape, start: lo, end: hi}) }
		scanPrefixedTokens(s, add)
		scanEncodedTokens(s, add)
	}
	if r.entropy >= 0 {
		scanAssignedEntropy(s, func(lo, hi int) { cs = append(cs, cand{prio: r.entropy, start: lo, end: hi}) })
	}
	if len(cs) == 0 {
		return nil
	}
	return repeatSecrets(s, tupleSecrets(s, r.resolve(s, cs)))
}

// tupleSecrets adds to fs (sorted, not overlapping) the further literals of a tuple whose first
// literal a password_key finding took: SUPER_SECRET_VALUES = '60b7...', '3b5d...' (detect-secrets'
// test files) gives the name every literal of the line, each of which must look random
// (looksRandom) and be no placeholder, as the weakest credential name asks of its value.
func tupleSecrets(s string, fs []Finding) []Finding {
	n := len(fs)
	for i := 0; i < n; i++ {
		f := fs[i]
		if f.Rule != RulePasswordKey || f.Start == 0 || f.End >= len(s) {
			continue
		}
		q := s[f.Start-1]
		if (q != '"' && q != '\'') || s[f.End] != q {
			continue
		}
		for at := f.End + 1; ; {
			j := at
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j >= len(s) || s[j] != ',' {
				break
			}
			j++
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j >= len(s) || s[j] != q {
				break
			}
			k := strings.IndexByte(s[j+1:], q)
			if k < 0 {
				break
			}
			a, b := j+1, j+1+k
			v := s[a:b]
			if strings.ContainsAny(v, "\r\n") || !looksRandom(v) || !secretValue(v, true, true, false) || overlapsAny(fs, a, b) {
				break
			}
			g := f
			g.Start, g.End = a, b
			fs = append(fs, g)
			at = b + 1
		}
	}
	if len(fs) > n {
		slices.SortFunc(fs, func(x, y Finding) int { return x.Start - y.Start })
	}
	return fs
}

// MinRepeatedSecret is the shortest secret whose other occurrences are taken (repeatSecrets
// here, the agent_redaction processor across a request), in bytes: shorter values (a 4-digit
// PIN) occur by chance.
const MinRepeatedSecret = 8

// repeatSecrets adds to fs (sorted, not overlapping) every other occurrence in s of a secret a
// finding took, as a finding of the same rule: once a value is known to be a credential, it is
// one wherever it stands (detect-secrets' config.ini gives the secret of
// real_secret_which_isnt_an_i_d to foreign_key_id too, a name that on its own says nothing). An
// occurrence that overlaps a finding is left to it.
func repeatSecrets(s string, fs []Finding) []Finding {
	n := len(fs)
	for i := 0; i < n; i++ {
		f := fs[i]
		if f.Category != CategorySecret || f.End-f.Start < MinRepeatedSecret {
			continue
		}
		v := s[f.Start:f.End]
		for at := 0; ; {
			j := strings.Index(s[at:], v)
			if j < 0 {
				break
			}
			a, b := at+j, at+j+len(v)
			at = b
			if a == f.Start || overlapsAny(fs, a, b) {
				continue
			}
			g := f
			g.Start, g.End = a, b
			fs = append(fs, g)
		}
	}
	if len(fs) > n {
		slices.SortFunc(fs, func(x, y Finding) int { return x.Start - y.Start })
	}
	return fs
}

// overlapsAny reports whether [a, b) overlaps a finding of fs.
func overlapsAny(fs []Finding, a, b int) bool {
	for _, f := range fs {
		if f.Start < b && f.End > a {
			return true
		}
	}
	return false
}

// keywordMatches returns every (overlapping) match of the keyword automaton in s, which it runs
// over s lower-cased (appendLowerASCII: offsets are those of s).
func (r *Redactor) keywordMatches(s string) []ahocorasick.Match {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	if len(s) <= shortLower {
		// attribute values such as model names and ids: a buffer on the stack
		var buf [shortLower]byte
		return r.ac.FindAllOverlapping(appendLowerASCII(buf[:0], b))
	}
	lb := lowerPool.Get().(*[]byte)
	*lb = appendLowerASCII((*lb)[:0], b)
	ms := r.ac.FindAllOverlapping(*lb)
	lowerPool.Put(lb)
	return ms
}

func (r *Redactor) runRule(cs []cand, s string, ri, lo, hi int) []cand {
	ru := r.rules[ri]
	w := s[lo:hi]
	n := -1
	if ru.narrow != nil {
		n = 1 // the window starts at the key: only its own match counts
	}
	if ri == r.lastLazy {
		// checked in resolve, and only when no finding of an earlier rule takes its start
		for _, m := range ru.re.FindAllStringIndex(w, n) {
			cs = append(cs, cand{prio: ri, start: m[0] + lo, end: m[1] + lo, unchecked: true})
		}
		return cs
	}
	var ms [][]int
	if ru.findAll != nil {
		ms = ru.findAll(w, n)
	} else {
		ms = ru.re.FindAllStringSubmatchIndex(w, n)
	}
	for _, m := range ms {
		// offsets in s, so that checks see the context outside the window
		for k := range m {
			if m[k] >= 0 {
				m[k] += lo
			}
		}
		a, b := m[0], m[1]
		if ru.group > 0 {
			if m[2*ru.group] < 0 {
				continue
			}
			a, b = m[2*ru.group], m[2*ru.group+1]
		}
		ok := true
		if ru.check != nil {
			a, b, ok = ru.check(s, m, a, b)
		}
		if ok && b > a {
			cs = append(cs, cand{prio: ri, start: a, end: b})
		}
	}
	return cs
}

// resolve keeps, by priority then length, the candidates that overlap no kept one (spans in s).
//
// The candidates of the last rule (lastLazy) may come unchecked: they are resolved after all
// others, and one whose start lies inside a kept span is dropped before its check runs, since
// its checked span would start there too (lazyCheck) and overlap it. The others are checked, then
// resolved as checked candidates are: the outcome is the same as checking every match first, for
// less work (card numbers are phone-shaped, and phone parsing costs tens of microseconds).
func (r *Redactor) resolve(s string, cs []cand) []Finding {
	byPrio := func(x, y cand) int {
		if x.prio != y.prio {
			return x.prio - y.prio
		}
		if x.start != y.start {
			return x.start - y.start
		}
		return (y.end - y.start) - (x.end - x.start)
	}
	slices.SortFunc(cs, byPrio)
	kept := make([]cand, 0, len(cs))
	n := len(cs)
	for n > 0 && cs[n-1].unchecked {
		n--
	}
	for _, c := range cs[:n] {
		kept = keep(kept, c)
	}
	if lz := cs[n:]; len(lz) > 0 {
		ru := r.rules[lz[0].prio]
		m := 0
		for _, c := range lz {
			if i := firstEndAfter(kept, c.start); i < len(kept) && kept[i].start <= c.start {
				continue
			}
			a, b, ok := c.start, c.end, true
			if ru.check != nil {
				a, b, ok = ru.check(s, []int{c.start, c.end}, a, b)
			}
			if ok && b > a {
				lz[m] = cand{prio: c.prio, start: a, end: b}
				m++
			}
		}
		lz = lz[:m]
		slices.SortFunc(lz, byPrio)
		for _, c := range lz {
			kept = keep(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := make([]Finding, len(kept))
	for i, k := range kept {
		ru := r.rules[k.prio]
		out[i] = Finding{Rule: ru.name, Category: ru.cat, Action: ru.action, Start: k.start, End: k.end}
	}
	return out
}

// firstEndAfter returns the index of the first of kept (sorted by start, not overlapping) that
// ends after pos.
func firstEndAfter(kept []cand, pos int) int {
	i, _ := slices.BinarySearchFunc(kept, pos, func(k cand, pos int) int {
		if k.end <= pos {
			return -1
		}
		return 1
	})
	return i
}

// keep inserts c into kept (sorted by start) unless it overlaps one of them.
func keep(kept []cand, c cand) []cand {
	i := firstEndAfter(kept, c.start)
	if i < len(kept) && kept[i].start < c.end {
		return kept
	}
	return slices.Insert(kept, i, c)
}

// window clips [lo, hi) to s and widens both ends to the edge of the token they cut, so that
// word-boundary assertions see real boundaries (at most ext bytes further: a longer token is
// base64 or similar, not a value of interest).
func window(s string, lo, hi, ext int) (int, int) {
	lo = max(lo, 0)
	hi = min(hi, len(s))
	for n := 0; lo > 0 && n < ext && isTokenByte(s[lo-1]); n++ {
		lo--
	}
	for n := 0; hi < len(s) && n < ext && isTokenByte(s[hi]); n++ {
		hi++
	}
	// do not split a UTF-8 sequence
	for lo > 0 && lo < len(s) && s[lo]&0xC0 == 0x80 {
		lo--
	}
	for hi < len(s) && s[hi]&0xC0 == 0x80 {
		hi++
	}
	return lo, hi
}

func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c == '%'
}

// scanDigitClusters calls f for each run of digits and separators (space - . ( ) +) holding at
// least 4 digits, where separators come at most two in a row, unless the run holds a decimal
// fraction (a '.' between digits followed by 5 or more digits: floats in embeddings, logprobs).
func scanDigitClusters(s string, f func(lo, hi, digits int, dot bool)) {
	n := len(s)
	for i := 0; i < n; {
		if i = nextDigit(s, i); i >= n {
			return
		}
		lo, digits, j, last := i, 0, i, i
		gap := 0
		dot := false
		decimal := false // a '.' directly followed by 5 or more digits: a decimal fraction
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

// scanIPv6 calls f for each IPv6 address: a run of hex digits, colons and dots with at least two
// colons that netip parses (loopback and unspecified excluded).
func scanIPv6(s string, f func(lo, hi int)) {
	n := len(s)
	for i := 0; i < n; i++ {
		if i = nextColon(s, i); i >= n {
			return
		}
		// need a hex digit or another colon on at least one side
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

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Token returns the replacement of value v found by rule name under action a: "[REDACTED:name]"
// for mask and drop, "name:<12 hex of HMAC-SHA256(key, v)>" for hash.
func (r *Redactor) Token(name string, a Action, v string) string {
	if a != ActionHash {
		return "[REDACTED:" + name + "]"
	}
	mac := r.macPool.Get().(interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
		Reset()
	})
	mac.Reset()
	_, _ = mac.Write(unsafe.Slice(unsafe.StringData(v), len(v)))
	var sum [sha256.Size]byte
	out := mac.Sum(sum[:0])
	r.macPool.Put(mac)
	return name + ":" + hex.EncodeToString(out[:6])
}

// apply replaces each finding's span in s with its token.
func (r *Redactor) apply(s string, fs []Finding) string {
	if len(fs) == 0 {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	prev := 0
	for _, f := range fs {
		sb.WriteString(s[prev:f.Start])
		sb.WriteString(r.Token(f.Rule, f.Action, s[f.Start:f.End]))
		prev = f.End
	}
	sb.WriteString(s[prev:])
	return sb.String()
}

// RedactString treats s as plain text: it returns s with every finding replaced, and the
// findings (spans in s). When nothing is found it returns s itself.
func (r *Redactor) RedactString(s string) (string, []Finding) {
	fs := r.Find(s)
	return r.apply(s, fs), fs
}

// HasDrop reports whether any finding asks for the whole value to be dropped.
func HasDrop(fs []Finding) bool {
	for _, f := range fs {
		if f.Action == ActionDrop {
			return true
		}
	}
	return false
}

// stripScheme removes an HTTP auth scheme ("Bearer ", "Basic ", ...) for placeholder checks.
func stripScheme(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i > 0 && i < 16 {
		return strings.TrimSpace(v[i+1:])
	}
	return v
}

func base64Decode(v string) (string, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("not base64")
}

// shortLower is the longest text whose lower-cased copy find makes on the stack.
const shortLower = 128

var lowerPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendLowerASCII appends b with A-Z turned to a-z (other bytes, UTF-8 included, unchanged, so
// offsets stay the same).
func appendLowerASCII(dst, b []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(b))[:n+len(b)]
	out := dst[n:]
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(out[i:], lowerWord(binary.LittleEndian.Uint64(b[i:])))
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return dst
}
