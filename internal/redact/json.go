// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/coregx/ahocorasick"
	"github.com/zeebo/xxh3"

	"github.com/runagain/runagain/internal/jsonkit"
)

// maxJSONDepth bounds how many times a JSON document held in a JSON string leaf is itself
// walked as JSON (tool-call arguments are often JSON inside JSON).
const maxJSONDepth = 4

// edit replaces s[start:end] with repl.
type edit struct {
	start, end int
	repl       string
	f          Finding
}

// Redact redacts a value whose shape is not known: a JSON object or array is walked with
// RedactJSON, anything else is treated as text. Findings have spans in s.
func (r *Redactor) Redact(s string) (string, []Finding) {
	out, fs, _ := r.RedactValue("", s)
	return out, fs
}

// RedactKeyed is Redact for a value stored under key (an attribute key, a JSON object key, an
// HTTP header name). When the key names a credential (SensitiveKey: Authorization, Cookie,
// password, api_key, token, ...) the whole value is one finding unless it is a placeholder
// such as "Bearer test_openai_api_key".
func (r *Redactor) RedactKeyed(key, s string) (string, []Finding) {
	out, fs, _ := r.RedactValue(key, s)
	return out, fs
}

// keyApplies reports whether values under key may be credential findings (keyFinding's test on
// the key alone, so that the value is decoded only when it may be one). It is memoised once, in
// the Redactor, for attribute keys and JSON object keys alike (a key of JSON held in a string is
// in a reused buffer: the memo keeps a copy).
func (r *Redactor) keyApplies(key string) bool {
	if m := r.keyMemo.Load(); m != nil {
		if v, ok := (*m)[key]; ok {
			return v
		}
	}
	name, _, ok := sensitiveKey(key)
	ok = ok && r.keyRuleOn[name]
	r.keyMemoAdd(key, ok)
	return ok
}

// keyMemoAdd records keyApplies(key) = ok. Lookups read an immutable map snapshot (keyMemo, no
// lock); keys are added to keyAll under keyMu, and the snapshot is republished from it when a
// key comes a second time without being in it, or when a quarter of keyAll is not in it, so
// that republishing costs O(1) per key amortised for new keys.
func (r *Redactor) keyMemoAdd(key string, ok bool) {
	r.keyMu.Lock()
	defer r.keyMu.Unlock()
	snap := 0
	if m := r.keyMemo.Load(); m != nil {
		if _, in := (*m)[key]; in {
			return // published meanwhile
		}
		snap = len(*m)
	}
	_, seen := r.keyAll[key]
	if !seen {
		if len(r.keyAll) >= maxKeyMemo {
			return
		}
		if r.keyAll == nil {
			r.keyAll = map[string]bool{}
		}
		r.keyAll[strings.Clone(key)] = ok
	}
	if seen || len(r.keyAll)-snap > snap/4 {
		m := maps.Clone(r.keyAll)
		r.keyMemo.Store(&m)
	}
}

// maxKeyMemo bounds the keys whose keyApplies a Redactor remembers (attribute and JSON object
// keys: a small vocabulary in practice; keys past the bound are classified every time).
const maxKeyMemo = 1024

func (r *Redactor) keyFinding(key, v string) (Finding, bool) {
	name, weak, ok := sensitiveKey(key)
	if !ok || !r.keyRuleOn[name] || v == "" {
		return Finding{}, false
	}
	t := strings.TrimSpace(v)
	if t == "" || t[0] == '{' || t[0] == '[' || isBooleanOrNull(t) || isPlaceholder(stripScheme(t)) || (weak && !looksRandom(t)) {
		return Finding{}, false
	}
	ru := r.byName[name]
	return Finding{Rule: name, Category: ru.cat, Action: ru.action, Start: 0, End: len(v)}, true
}

// walker is the per-call state of RedactJSON, pooled so that a value with nothing to redact
// allocates nothing: the edits found so far, the prefilter's hot ranges of every document being
// walked (outer documents first), and one unescape buffer per level of JSON held in a string.
type walker struct {
	edits  []edit
	hot    []hotRange
	ms     []ahocorasick.Match // keyword matches of the documents being walked, by match end
	leafMs []ahocorasick.Match
	escs   []int
	toks   []strTok   // string tokens of the documents being walked (outer documents first)
	elems  []elemSpan // array elements of the documents being walked (arrayEdits)
	hasher xxh3.Hasher
	dec    [maxJSONDepth + 1][]byte
	lower  []byte
}

var walkerPool = sync.Pool{New: func() any { return new(walker) }}

func (w *walker) release() {
	clear(w.edits) // drop the replacement strings
	w.edits, w.hot, w.ms, w.toks, w.elems = w.edits[:0], w.hot[:0], w.ms[:0], w.toks[:0], w.elems[:0]
	if cap(w.lower) > 1<<20 {
		w.lower = nil // do not pin a huge buffer
	}
	for i := range w.dec {
		if cap(w.dec[i]) > 1<<20 {
			w.dec[i] = nil
		}
	}
	walkerPool.Put(w)
}

// RedactJSON walks s as a JSON document: every object key and string leaf is examined (string
// leaves under credential keys as a whole, string leaves holding JSON recursively), and only the
// bytes of found values are replaced, at their offsets; all other bytes of s stay as they were, so
// valid JSON stays valid. ok is false, and s is returned unchanged, when s is not an object or
// array in valid JSON.
//
// The walk streams the tokens of jsonkit (jsontext), building no tree and copying no string.
// Before it, a prefilter over the raw bytes (prefilter) marks where any rule could trigger; a
// string leaf outside those ranges, not under a credential key and not holding JSON, is not
// decoded or scanned at all. A value with nothing to redact allocates nothing.
func (r *Redactor) RedactJSON(s string) (out string, fs []Finding, ok bool) {
	if !LooksJSON(s) {
		return s, nil, false
	}
	w := walkerPool.Get().(*walker)
	defer w.release()
	if !r.docEdits(w, s, 0) {
		return s, nil, false
	}
	out, fs = w.apply(s)
	return out, fs, true
}

// apply returns s with w.edits applied, and their findings (s itself and nil without edits).
func (w *walker) apply(s string) (string, []Finding) {
	if len(w.edits) == 0 {
		return s, nil
	}
	n := len(s)
	for _, e := range w.edits {
		n += len(e.repl) - (e.end - e.start)
	}
	var sb strings.Builder
	sb.Grow(n)
	prev := 0
	fs := make([]Finding, len(w.edits))
	for i, e := range w.edits {
		sb.WriteString(s[prev:e.start])
		sb.WriteString(e.repl)
		prev = e.end
		fs[i] = e.f
	}
	sb.WriteString(s[prev:])
	return sb.String(), fs
}

// escapedLiteral reports whether s may be a JSON string literal whose text differs from its raw
// bytes: it begins and ends with '"' and holds a backslash between them. A tool's result is
// recorded this way (gen_ai.tool.call.result holds the JSON encoding of what the tool returned),
// and an encoder may write any character of it as an escape (jane\u0040x.com, https:\/\/...).
func escapedLiteral(s string) bool {
	return len(s) >= 3 && s[0] == '"' && s[len(s)-1] == '"' && strings.IndexByte(s[1:len(s)-1], '\\') >= 0
}

// redactLiteral redacts s, a JSON string literal, as a JSON walk redacts a string leaf at depth
// 0: its decoded text is scanned (or walked, when it holds JSON), and only the raw bytes of the
// findings are replaced (escapes elsewhere stay as written). Its verdict goes to the CleanCache
// under the leaf's key, so the next call's history, which holds the same literal as a leaf,
// finds it. ok is false, and s is returned unchanged, when s is not one valid JSON string
// literal.
func (r *Redactor) redactLiteral(s string) (out string, fs []Finding, ok bool) {
	w := walkerPool.Get().(*walker)
	defer w.release()
	if !r.jsonEdits(w, s, 0) {
		return s, nil, false
	}
	out, fs = w.apply(s)
	return out, fs, true
}

// docEdits appends to w.edits the edits for the JSON document s (see jsonEdits): an array
// through arrayEdits when there is a CleanCache, anything else (or an array arrayEdits leaves)
// through jsonEdits.
func (r *Redactor) docEdits(w *walker, s string, depth int) bool {
	if r.cache != nil && !r.legacyScan && r.arrayEdits(w, s, depth) {
		return true
	}
	return r.jsonEdits(w, s, depth)
}

// strTok is one string token of a JSON document, recorded by jsonEdits' first pass: its body
// [cs, ce) in the document, whether it is an object key (name) or a member value (member),
// whether its body holds an escape, and its CleanCache state.
type strTok struct {
	cs, ce            int
	name, member, esc bool
	keyApplies        bool         // a member value whose key may make it a credential (keyApplies)
	nestedCred        bool         // the "value" member of an object given to a credential name (credentialParent)
	clean             bool         // known clean (or with cached edits): not examined
	cached            *leafEdits   // the cached edits when clean and not nil
	cacheable         bool         // not known: its verdict is added once examined
	hash              xxh3.Uint128 // its CleanCache hash when cacheable
}

// jsonEdits appends to w.edits the edits for the JSON document s, sorted and non-overlapping,
// with spans in s. It returns false, with w.edits as it found them, when s is not valid JSON.
//
// A first pass records the string tokens (and, with a CleanCache, looks up every string of at
// least MinCleanCacheLen bytes that is not under a credential key); the prefilter then runs over
// the strings not known and on the stretches between long strings not known to hold no trigger
// (no trigger crosses a '"', see prefilter), and a second pass examines the strings not known
// (a known string with findings gets its cached edits). What a string's examination gave (clean,
// or its edits) is added to the cache.
func (r *Redactor) jsonEdits(w *walker, s string, depth int) bool {
	editsMark, hotMark, msMark, toksMark := len(w.edits), len(w.hot), len(w.ms), len(w.toks)
	defer func() { w.hot, w.ms, w.toks = w.hot[:hotMark], w.ms[:msMark], w.toks[:toksMark] }()
	if !r.jsonTokens(w, s, depth) {
		w.edits = w.edits[:editsMark]
		return false
	}
	toksEnd := len(w.toks)
	all := false
	if r.cache == nil {
		all = r.prefilter(w, s, 0, len(s))
	} else {
		// The prefilter runs on each string of at least MinCleanCacheLen bytes not known clean,
		// and on each stretch between such strings (structure and short strings: the same bytes
		// around every message) unless that stretch is known to hold no trigger.
		lo := 0
		for i := toksMark; i < toksEnd && !all; i++ {
			t := w.toks[i]
			if t.ce-t.cs < MinCleanCacheLen {
				continue
			}
			if all = r.prefilterBetween(w, s, lo, t.cs); !all && !t.clean {
				all = r.prefilter(w, s, t.cs, t.ce)
			}
			lo = t.ce
		}
		if !all {
			all = r.prefilterBetween(w, s, lo, len(s))
		}
	}
	hot, hotEnd := hotMark, len(w.hot)
	mk, msEnd := msMark, len(w.ms)
	var lastKey string
	for i := toksMark; i < toksEnd; i++ {
		t := w.toks[i] // a copy: the nested walk below appends to w.toks
		raw := s[t.cs:t.ce]
		if t.name {
			lastKey = raw
			if t.esc {
				lastKey = string(appendUnescaped(nil, raw)) // rare: an escaped key
			}
		}
		if t.clean {
			if t.cached != nil {
				w.appendCached(t.cached, t.cs)
			}
			continue
		}
		mark := len(w.edits)
		r.tokenEdits(w, s, depth, t, lastKey, all, &hot, hotEnd, &mk, msEnd)
		if t.cacheable {
			if len(w.edits) == mark {
				r.cleanAdd(t.hash)
			} else {
				r.editsAdd(t.hash, w.edits[mark:], t.cs)
			}
		}
	}
	return true
}

// prefilterBetween is prefilter on s[lo:hi], a stretch of JSON between long strings, looked up
// in and added to the CleanCache: a stretch in which the prefilter finds no trigger is not
// scanned again.
func (r *Redactor) prefilterBetween(w *walker, s string, lo, hi int) (all bool) {
	if hi <= lo {
		return false
	}
	h, known := r.cleanLookup(s[lo:hi], r.cleanSeed(kindBetween))
	if known {
		return false
	}
	hot, ms := len(w.hot), len(w.ms)
	if all = r.prefilter(w, s, lo, hi); !all && len(w.hot) == hot && len(w.ms) == ms {
		r.cleanAdd(h)
	}
	return all
}

// jsonTokens appends the string tokens of s to w.toks (see strTok); false when s is not valid
// JSON.
func (r *Redactor) jsonTokens(w *walker, s string, depth int) bool {
	sc := jsonkit.GetScannerString(s)
	defer jsonkit.PutScanner(sc)
	keyApplies := false
	// cred[d]: the object or array open at nesting d is the value of a credential name
	// (credentialParent), or an element of such an array; lastName is the last member name,
	// valueNext that it was "value" inside such an object
	var cred [maxCredNesting]bool
	d := 0
	lastName, valueNext := "", false
	for {
		tk, err := sc.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		switch tk.Kind {
		case '{', '[':
			if d+1 < maxCredNesting {
				d++
				cred[d] = lastName != "" && credentialParent(lastName) || lastName == "" && cred[d-1] // a member's value, or an element
			}
			lastName, valueNext = "", false
			continue
		case '}', ']':
			if d > 0 {
				d--
			}
			lastName, valueNext = "", false
			continue
		case '"':
		default:
			lastName, valueNext = "", false
			continue
		}
		t := strTok{cs: tk.Start + 1, ce: tk.End - 1, name: tk.Name, member: tk.Member}
		raw := s[t.cs:t.ce]
		t.esc = strings.IndexByte(raw, '\\') >= 0
		if t.name {
			key := raw
			if t.esc {
				key = string(appendUnescaped(nil, raw))
			}
			keyApplies = r.keyApplies(key)
			lastName, valueNext = key, cred[d] && key == "value"
		} else {
			t.nestedCred = t.member && valueNext
			lastName, valueNext = "", false
		}
		t.keyApplies = t.member && keyApplies
		if r.cache != nil && len(raw) >= MinCleanCacheLen && !t.keyApplies && !t.nestedCred {
			kind := uint64(kindLeaf) | uint64(depth)<<8
			if t.name {
				kind = kindName
			}
			t.hash, t.clean, t.cached = r.cacheLookup(raw, r.cleanSeed(kind))
			t.cacheable = !t.clean
		}
		w.toks = append(w.toks, t)
	}
}

// tokenEdits appends the edits of string token t of s (lastKey: the key of the object member
// it is in, if any).
func (r *Redactor) tokenEdits(w *walker, s string, depth int, t strTok, lastKey string, all bool, hot *int, hotEnd int, mk *int, msEnd int) {
	cs, ce, esc := t.cs, t.ce, t.esc
	raw := s[cs:ce]
	if t.keyApplies {
		dec := w.unescape(depth, raw, esc)
		if f, ok := r.keyFinding(lastKey, dec); ok {
			f.Start, f.End = cs, ce
			w.edits = append(w.edits, edit{start: cs, end: ce, repl: jsonEscape(r.Token(f.Rule, f.Action, dec)), f: f})
			return
		}
	}
	if t.nestedCred && r.generic >= 0 {
		dec := w.unescape(depth, raw, esc)
		if explicitTokenShaped(dec) || credentialShaped(dec, "key") {
			ru := r.rules[r.generic]
			f := Finding{Rule: ru.name, Category: ru.cat, Action: ru.action, Start: cs, End: ce}
			w.edits = append(w.edits, edit{start: cs, end: ce, repl: jsonEscape(r.Token(f.Rule, f.Action, dec)), f: f})
			return
		}
	}
	// a JSON document inside a string leaf
	if !t.name && depth < maxJSONDepth && rawLooksJSON(raw) {
		dec := w.unescape(depth, raw, esc)
		if LooksJSON(dec) {
			mark := len(w.edits)
			if r.docEdits(w, dec, depth+1) {
				m := offsetMap{raw: raw}
				for i := mark; i < len(w.edits); i++ {
					e := &w.edits[i]
					e.start, e.end = cs+m.at(e.start), cs+m.at(e.end)
					e.f.Start, e.f.End = e.start, e.end
					e.repl = jsonEscape(e.repl)
				}
				return
			}
		}
	}
	if !all && !overlapsHot(w.hot, hot, hotEnd, cs, ce) {
		return // no rule can trigger in this leaf
	}
	var fs []Finding
	dec := w.unescape(depth, raw, esc)
	switch {
	case all:
		fs = r.Find(dec)
	case !esc:
		fs = r.find(dec, w.leafMatches(mk, msEnd, cs, ce), true)
	default:
		if ms, ok := w.leafMatchesEscaped(mk, msEnd, cs, ce, raw); ok {
			fs = r.find(dec, ms, true)
		} else {
			fs = r.Find(dec)
		}
	}
	if t.member {
		fs = dropIDShapes(lastKey, fs, len(dec))
	}
	m := offsetMap{raw: raw}
	for _, f := range fs {
		repl := jsonEscape(r.Token(f.Rule, f.Action, dec[f.Start:f.End]))
		f.Start, f.End = cs+m.at(f.Start), cs+m.at(f.End)
		w.edits = append(w.edits, edit{start: f.Start, end: f.End, repl: repl, f: f})
	}
}

// unescape returns the decoded content of the string literal body raw, in the walker's buffer
// for depth (valid until the next unescape at that depth) or raw itself when it has no escape.
func (w *walker) unescape(depth int, raw string, esc bool) string {
	if !esc {
		return raw
	}
	w.dec[depth] = appendUnescaped(w.dec[depth][:0], raw)
	return unsafe.String(unsafe.SliceData(w.dec[depth]), len(w.dec[depth]))
}

// rawLooksJSON reports whether the string literal body raw decodes to text that begins, after
// white space, with { or [ (LooksJSON of the decoded text; escaped white space is skipped).
func rawLooksJSON(raw string) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
		case '\\':
			if i+1 < len(raw) && (raw[i+1] == 'n' || raw[i+1] == 't' || raw[i+1] == 'r') {
				i++
				continue
			}
			return i+1 < len(raw) && raw[i+1] == 'u' // \u007b: decode to know
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}

// unescapeUnit decodes the escape or byte at raw[i]: it returns the number of raw bytes it takes
// and the decoded bytes (n of out). Malformed escapes decode leniently (RedactJSON only sees
// valid JSON, but the same decoder serves every caller): a bad \u is a literal backslash, a lone
// surrogate is U+FFFD, invalid UTF-8 is kept byte for byte.
func unescapeUnit(raw string, i int) (size int, out [4]byte, n int) {
	c := raw[i]
	if c != '\\' || i+1 >= len(raw) {
		out[0] = c
		return 1, out, 1
	}
	switch raw[i+1] {
	case 'b':
		out[0] = '\b'
	case 'f':
		out[0] = '\f'
	case 'n':
		out[0] = '\n'
	case 'r':
		out[0] = '\r'
	case 't':
		out[0] = '\t'
	case 'u':
		r1, ok := hex4(raw, i+2)
		if !ok {
			out[0] = '\\'
			return 1, out, 1
		}
		size = 6
		ru := rune(r1)
		if utf16.IsSurrogate(ru) {
			j := i + 6
			if r2, ok2 := hex4(raw, j+2); ok2 && j+1 < len(raw) && raw[j] == '\\' && raw[j+1] == 'u' {
				if d := utf16.DecodeRune(ru, rune(r2)); d != utf8.RuneError {
					ru = d
					size = 12
				} else {
					ru = utf8.RuneError
				}
			} else {
				ru = utf8.RuneError
			}
		}
		return size, out, utf8.EncodeRune(out[:], ru)
	default: // '"', '\\', '/' and anything else: the byte itself
		out[0] = raw[i+1]
	}
	return 2, out, 1
}

// appendUnescaped appends the content of the JSON string literal body raw, unescaped.
func appendUnescaped(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			j++
		}
		dst = append(dst, raw[i:j]...)
		if i = j; i >= len(raw) {
			break
		}
		size, out, n := unescapeUnit(raw, i)
		dst = append(dst, out[:n]...)
		i += size
	}
	return dst
}

// offsetMap maps offsets in the unescaped content of raw back to offsets in raw: decoded byte d
// maps to the start of the escape (or byte) that produced it, and len(decoded) to len(raw).
// Queries are cheapest in increasing order.
type offsetMap struct {
	raw    string
	ri, di int
}

func (m *offsetMap) at(d int) int {
	if d < m.di {
		m.ri, m.di = 0, 0
	}
	for m.di < d && m.ri < len(m.raw) {
		if m.raw[m.ri] != '\\' {
			m.ri++
			m.di++
			continue
		}
		size, _, n := unescapeUnit(m.raw, m.ri)
		if m.di+n > d {
			return m.ri // inside the bytes of one escape
		}
		m.ri += size
		m.di += n
	}
	return m.ri
}

func hex4(s string, i int) (int, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v := 0
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// jsonEscape escapes s for the inside of a JSON string literal (tokens are plain ASCII, so this
// normally returns s).
func jsonEscape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == '"' || s[i] == '\\' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// looksArray reports whether s, after leading white space, begins with [.
func looksArray(s string) bool {
	i := skipWS(s, 0)
	return i < len(s) && s[i] == '['
}

// LooksJSON reports whether s, after leading white space, begins with { or [.
func LooksJSON(s string) bool {
	i := skipWS(s, 0) // the white space of strings.TrimLeft(s, " \t\r\n"), without building its set per call
	return i < len(s) && (s[i] == '{' || s[i] == '[')
}

// RedactValue is RedactKeyed that also reports whether s looked like JSON (LooksJSON) or like a
// JSON string literal holding an escape (escapedLiteral) but did not parse; such a value is
// redacted as text. With a CleanCache, a value found clean under key
// is remembered, and returned unchanged without a scan when it comes again under the same key
// (values under credential keys are always examined), when it is at least MinCleanCacheLen bytes
// long or holds a digit cluster that a digit rule would examine with its regex (digitGated: ids
// and model names such as "gpt-4o-2024-08-06", sent on every span, would otherwise run the phone
// and IBAN regexes and phone-number parsing every time).
func (r *Redactor) RedactValue(key, s string) (out string, fs []Finding, malformedJSON bool) {
	applies := r.keyApplies(key)
	if applies {
		if f, ok := r.keyFinding(key, s); ok {
			f.End = len(s)
			return r.Token(f.Rule, f.Action, s), []Finding{f}, false
		}
	}
	// A short text value seen clean before (span names, model and provider names, addresses)
	// is answered from shortMemo before anything else.
	short := r.cache != nil && !r.legacyScan && !r.noShortMemo && !applies && len(s) < MinCleanCacheLen && !LooksJSON(s) && !escapedLiteral(s)
	var sh xxh3.Uint128
	if short {
		var clean bool
		if sh, clean = r.shortClean(s); clean {
			return s, nil, false
		}
	}
	var h xxh3.Uint128
	// An array is not looked up whole: arrayEdits looks up each of its elements, and a
	// conversation's history, resent with each call, is a new array of mostly known elements.
	cacheable := r.cache != nil && !applies && (len(s) >= MinCleanCacheLen || r.digitGated(s)) &&
		(r.legacyScan || !looksArray(s))
	if cacheable {
		var clean bool
		if h, clean = r.cleanLookup(s, r.valueSeed(key)); clean {
			if short {
				r.shortAdd(sh)
			}
			return s, nil, false
		}
	}
	if out, fs, encoded, ok := r.redactEncoded(s); encoded {
		if !ok {
			out, fs = r.RedactString(s)
			return out, fs, true // malformed: as text, examined every time (never cached), so that every time is counted
		}
		if cacheable && len(fs) == 0 {
			r.cleanAdd(h)
		}
		return out, fs, false
	}
	if body, ok := r.sharedLeaf(s); ok {
		fs = r.findSharing(s, body)
		out = r.apply(s, fs)
	} else {
		out, fs = r.RedactString(s)
	}
	if kept := dropIDShapes(key, fs, len(s)); len(kept) != len(fs) {
		fs, out = kept, r.apply(s, kept)
	}
	if len(fs) == 0 {
		if cacheable {
			r.cleanAdd(h)
		}
		if short {
			r.shortAdd(sh)
		}
	}
	return out, fs, false
}

// redactEncoded redacts s on its decoded view when it is JSON (LooksJSON: RedactJSON) or a JSON
// string literal whose raw bytes hold an escape (escapedLiteral: redactLiteral); encoded is false
// for any other text. ok is false when s is one of those and does not parse.
func (r *Redactor) redactEncoded(s string) (out string, fs []Finding, encoded, ok bool) {
	switch {
	case LooksJSON(s):
		out, fs, ok = r.RedactJSON(s)
	case escapedLiteral(s):
		out, fs, ok = r.redactLiteral(s)
	default:
		return s, nil, false, false
	}
	return out, fs, true, ok
}

// sharedLeaf reports whether the text value s is a JSON string literal whose body a later JSON
// document may hold as a string leaf that the CleanCache would look up: s is '"' + body + '"'
// with body at least MinCleanCacheLen bytes, holding no escape, quote or control byte (so that
// the leaf's raw bytes are its text) and not looking like JSON (such a leaf is walked, not
// scanned). A tool's result is recorded this way (gen_ai.tool.call.result holds the JSON
// encoding of what the tool returned) and comes back as a leaf of the next LLM call's
// gen_ai.input.messages.
func (r *Redactor) sharedLeaf(s string) (body string, ok bool) {
	if r.cache == nil || r.legacyScan || len(s) < MinCleanCacheLen+2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	body = s[1 : len(s)-1]
	return body, plainJSONBody(body) && !rawLooksJSON(body)
}

// findSharing returns Find(s) for s = '"' + body + '"' (see sharedLeaf) and adds to the
// CleanCache the verdict that a JSON walk at depth 0 gives body as a string leaf: Find(body),
// with its edits as tokenEdits makes them (the leaf has no escape, so its text is its raw bytes
// and offsets map one to one). Both scans share one pass of the keyword automaton: no keyword
// holds a '"' (prefilterOK; otherwise body is scanned on its own), so the matches of body are
// those of s inside it, moved by one. The leaf's verdict is what the walk would add for it (a
// leaf not under a credential key, the only ones looked up), so the later lookup returns what
// examining it would.
func (r *Redactor) findSharing(s, body string) []Finding {
	var fs, bfs []Finding
	if r.ac == nil || !r.prefilterOK {
		fs, bfs = r.Find(s), r.Find(body)
	} else {
		ms := r.keywordMatches(s)
		fs = r.find(s, ms, true)
		bms := ms[:0] // in place: find is done with ms
		for _, m := range ms {
			if m.Start >= 1 && m.End <= len(s)-1 {
				bms = append(bms, ahocorasick.Match{PatternID: m.PatternID, Start: m.Start - 1, End: m.End - 1})
			}
		}
		bfs = r.find(body, bms, true)
	}
	h := xxh3.HashString128Seed(body, r.cleanSeed(uint64(kindLeaf)))
	if len(bfs) == 0 {
		r.cleanAdd(h)
		return fs
	}
	es := make([]edit, len(bfs))
	for i, f := range bfs {
		es[i] = edit{start: f.Start, end: f.End, repl: jsonEscape(r.Token(f.Rule, f.Action, body[f.Start:f.End])), f: f}
	}
	r.editsAdd(h, es, 0)
	return fs
}

// digitGated reports whether s holds a digit cluster that passes the gate of a digit rule (see
// scanDigitClusters and prefilter): the scan of s then runs that rule's regex on it.
func (r *Redactor) digitGated(s string) bool {
	if r.legacyScan || len(s) < r.minGateDigits || nextDigit(s, 0) == len(s) {
		return false
	}
	gated := false
	scanDigitClusters(s, func(_, _, digits int, dot bool) {
		for _, ri := range r.digitIdx {
			if ru := r.rules[ri]; digits >= ru.minDigits && (!ru.needDot || dot) {
				gated = true
				return
			}
		}
	})
	return gated
}

// CleanCacheStats returns the statistics of the Redactor's CleanCache (zero without one).
func (r *Redactor) CleanCacheStats() CleanCacheStats { return r.cache.Stats() }

// maxCredNesting bounds the nesting jsonTokens follows for credentialParent (deeper objects are
// read as not under a credential name).
const maxCredNesting = 64

// credentialParent reports whether an object or array given to the member name key holds a
// credential in its "value" member: the name holds a credential word (genericKeywords, as the
// generic detector reads names: keyData, apiKey, client_secret) and is neither the bare word
// (key, token: map keys and tokenizer output) nor a name about a credential (primaryKeyId,
// token_url: nonCredentialSuffixes; token_usage, public_key: the words genericScan refuses). Tink keysets ("keyData": {"typeUrl": ..., "value": ...})
// and ARM template parameters ("adminPassword": {"value": ...}) are written so.
func credentialParent(key string) bool {
	if len(key) < 4 || len(key) > 64 {
		return false
	}
	var buf [64]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c == '-' || c == '.' {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	k := string(buf[:n])
	if bareCredentialName(k) {
		return false
	}
	found := false
	for _, w := range genericKeywords {
		if strings.Contains(k, w) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	if aboutCredential(key) != "" {
		return false
	}
	for _, w := range []string{"public", "csrf", "xsrf", "hash", "count", "limit", "usage"} {
		if strings.Contains(k, w) {
			return false // as genericScan: about a credential, or not one
		}
	}
	return true
}
