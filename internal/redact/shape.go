// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"unsafe"
)

// RulePrefixedToken is the detector of shape: a credential of a family no rule knows, found by
// how vendors write API tokens (issue 33), not by any vendor's prefix.
//
// Most providers issue tokens as a short name, a separator and a long random body: ghp_<36>,
// ddp_<36>, dckr_pat_<27>, xai-<80>, HRKU-<60>, whsec_<32>, sb_secret_<31>, hvs.<90>. The
// rule takes that shape and no list of prefixes, so leaving a family's own rule out (the
// leave-one-family-out score of secrets-score) leaves the family findable. A token of shape is a
// maximal run of [A-Za-z0-9_-] (one '.' allowed as its first separator, up to two '=' of
// padding after it) that
//
//   - starts at a boundary: not after a letter, digit, '_', '-', '.', '/', '+', '\\', '%', '@' or
//     '&' (inside a word, a path, a URL, base64 or an e-mail address it is part of something else);
//   - starts with a prefix of 2 to 10 letters and digits, the first two letters, the letters of
//     one case (ghp, dckr, HRKU, sq0csp; not PWHn6CD5, which is random), then '_', '-' or '.';
//   - has a body (everything after that first separator) of at least 30 letters and digits,
//     separators not counted, holding upper and lower case, and digits or a random mix of cases
//     (a quarter to three quarters of the letters upper case: not CamelCase words), with a
//     Shannon entropy of at least 4.0 bits per byte (30 random base62 characters average 4.5 and
//     99% reach 4.1; words, snake_case and kebab-case names, counting runs and fillers stay
//     below); or, with letters of one case, 36 letters and digits, a fifth of them digits and a
//     fifth letters, at least 4.1 bits per byte (36 random base36 characters average 4.36 and
//     96% reach 4.1; hexadecimal cannot pass 4.0);
//     in both cases with no counting run of 8 (abcdefgh, 12345678), no more than half of its
//     letters in lower-case runs of 5 or more (words: SponsoredProductsRemoteSearch), no UUID
//     inside and no placeholder marker (isPlaceholder);
//   - ends at a boundary: not followed by a letter or digit, nor by '.' and a letter (a host
//     name or a dotted path), nor by '@', nor by a quote and ':' (a JSON object key);
//   - is not a public key by its prefix (pk, pub, public: pk_live_... is publishable);
//   - is not the value of a key named as an identifier (id, *_id, *Id, *-id, *.id, ids): "id":
//     "chatcmpl-...", tool_call_id: call_..., in text, in a JSON member (its key seen by the JSON
//     walk) and in an attribute (gen_ai.response.id).
//
// The body floor of 30 is measured on the corpus agent recordings (1,177 cassettes and traces,
// make secrets-score): the provider identifiers they carry in the same shape are shorter
// (OpenAI chatcmpl-: 29 body characters, call_/asst_/thread_/run_/step_/proj_: 24, Anthropic
// msg_/toolu_, also under bdrk_/vrtx_: 24 to 28) or hexadecimal (OpenAI resp_/msg_/fc_: 48 to
// 50 hex digits, a content hash's alphabet), and none of them is taken. Hexadecimal bodies
// (rubygems_, packagist_ack_, dop_v1_) are left to the rules and the generic detector, which read
// the context: by shape they are content hashes and ids. Tokens with bodies under 30 (GOCSPX-<28>,
// PMAT-<26>) are not found by shape. scanEncodedTokens finds the same shape base64-encoded. The
// entropy figures are those of uniformly random strings (20,000 draws each).
const RulePrefixedToken = "prefixed_token"

// Shape detector thresholds (see RulePrefixedToken).
const (
	shapeMinBody    = 30  // letters and digits after the prefix
	shapeMaxPrefix  = 10  // bytes of the prefix
	shapeMinEntropy = 4.0 // bits per byte of the body
	// a body with letters of one case: at least 36 letters and digits, a fifth of them digits
	// and a fifth letters, 4.1 bits per byte (36 random base36 characters average 4.36, 96%
	// reach 4.1; hexadecimal cannot pass 4.0)
	shapeMinBodyOneCase    = 36
	shapeMinEntropyOneCase = 4.1
)

// shapeTokenLen is the shortest run that can hold a token of shape: a 2-byte prefix, the
// separator and the body.
const shapeTokenLen = 2 + 1 + shapeMinBody

func isShapeByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// shapeBoundaryBefore: a token of shape may start after c.
func shapeBoundaryBefore(c byte) bool {
	return !isShapeByte(c) && c != '.' && c != '/' && c != '+' && c != '\\' && c != '%' && c != '@' && c != '&'
}

// scanPrefixedTokens calls f for each token of shape in s (see RulePrefixedToken). A token lies
// inside a run of [A-Za-z0-9_.=-] of at least shapeTokenLen bytes (longRuns finds them with a
// stride, without a look at most bytes of prose); in such a run each '_', '-' or '.' is tried as
// the separator after a prefix, and the body run after a failed one is skipped.
func scanPrefixedTokens(s string, f func(lo, hi int)) {
	longRuns(s, shapeTokenLen, looseShapeSet, func(lo, hi int) {
		if a, b, c, d, ok := tokenPair(s, lo, hi); ok {
			f(a, b)
			f(c, d)
			return
		}
		if a, b, c, d, ok := quotedPair(s, lo, hi); ok {
			f(a, b)
			f(c, d)
			return
		}
		if i0 := strings.IndexAny(s[lo:hi], "_-."); i0 < 0 {
			if a, b, c, d, ok := pairedSecret(s, lo, hi); ok {
				f(a, b)
				f(c, d)
			}
			return
		}
		for i := lo; i < hi; {
			j := strings.IndexAny(s[i:hi], "_-.")
			if j < 0 {
				return
			}
			p := i + j
			if hi-p < shapeMinBody+1 {
				return
			}
			a := p
			for a > 0 && p-a <= shapeMaxPrefix && isAlnum(s[a-1]) {
				a--
			}
			end := shapeRunEnd(s, p+1)
			if t0, t1, ok := prefixedToken(s, a, p, end); ok {
				f(t0, t1)
			} else if t0, t1, ok := hexPrefixedToken(s, a, p, end); ok {
				f(t0, t1)
			}
			i = max(p+1, end)
		}
	})
}

// longRuns calls f, in order, for each maximal run of bytes of s in the set in that is at least
// n bytes long (n >= 31; in holds no byte below '-' and none of 0x80 or more). Such a run covers
// three consecutive aligned 8-byte words of s with no byte below '-' (blanks, quotes, commas,
// control bytes) and none above 0x7f. Those words are found eight bytes at a time with the
// "hasless" word test (Bit Twiddling Hacks, "Determine if a word has a byte less than n", exact
// as a test of the whole word for n <= 128), which prose fails in nearly every word; only the
// stretches of three or more such words, and the last n+7 bytes, are read byte by byte.
func longRuns(s string, n int, in *[256]bool, f func(lo, hi int)) {
	done := 0 // every run ending at or before done was reported
	exact := func(lo, hi int) {
		for k := max(lo, done); k < hi; k++ {
			if !in[s[k]] {
				continue
			}
			a, e := k, k+1
			for a > done && in[s[a-1]] {
				a--
			}
			for e < len(s) && in[s[e]] {
				e++
			}
			if e-a >= n {
				f(a, e)
			}
			done, k = e, e
		}
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	const lt = swarOnes * '-'
	w := len(b) &^ 7
	good := 0
	for i := 0; i < w; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-lt)&^x&swarHigh == 0 && x&swarHigh == 0 {
			good++
			continue
		}
		if good >= 3 {
			exact(i-8*good, i)
		}
		good = 0
	}
	if good >= 3 {
		exact(w-8*good, w)
	}
	exact(max(0, w-n), len(b))
}

// looseShapeSet is the set of looseShapeByte.
var looseShapeSet = func() *[256]bool {
	var t [256]bool
	for c := range 256 {
		t[c] = looseShapeByte(byte(c))
	}
	return &t
}()

// shapeRunEnd returns the end of the run of token bytes starting at i.
func shapeRunEnd(s string, i int) int {
	for i < len(s) && isShapeByte(s[i]) {
		i++
	}
	return i
}

// prefixedToken checks the candidate whose prefix is s[a:p], its separator s[p] and whose run
// of token bytes after it ends at end; it returns the span of the token.
func prefixedToken(s string, a, p, end int) (int, int, bool) {
	pre := p - a
	if pre < 2 || pre > shapeMaxPrefix || (a > 0 && !shapeBoundaryBefore(s[a-1])) {
		return 0, 0, false
	}
	if !isAlpha(s[a]) || !isAlpha(s[a+1]) {
		return 0, 0, false
	}
	lower, upper := false, false
	for i := a; i < p; i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	if lower && upper {
		return 0, 0, false
	}
	if publicPrefix(s[a:p]) {
		return 0, 0, false
	}
	if s[p] == '.' && (p+1 >= len(s) || !isAlnum(s[p+1])) {
		return 0, 0, false
	}
	body := s[p+1 : end]
	// the body's letters and digits: count, classes, entropy, counting runs
	var counts [128]uint16
	alnum, bl, bu, bd := 0, false, false, false
	run, best := 1, 1
	var prev byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '_' || c == '-' {
			continue
		}
		alnum++
		counts[c]++
		switch {
		case c >= 'a' && c <= 'z':
			bl = true
		case c >= 'A' && c <= 'Z':
			bu = true
		default:
			bd = true
		}
		if c == prev+1 {
			run++
			best = max(best, run)
		} else {
			run = 1
		}
		prev = c
	}
	if alnum < shapeMinBody || best >= 8 || !bd && !(bl && bu) {
		return 0, 0, false
	}
	h := entropyCounts(counts[:], alnum)
	if bl != bu {
		// letters of one case and digits (base36 and the like): longer, more digits, and more
		// entropy than hexadecimal can have (at most 4 bits per byte), which leaves out hex
		// digests and hex ids
		digits := 0
		for c := '0'; c <= '9'; c++ {
			digits += int(counts[c])
		}
		if alnum < shapeMinBodyOneCase || digits*5 < alnum || (alnum-digits)*5 < alnum || h < shapeMinEntropyOneCase {
			return 0, 0, false
		}
	} else if h < shapeMinEntropy {
		return 0, 0, false
	}
	if bl && bu && !bd && !mixedCase(body) {
		return 0, 0, false // CamelCase words: one capital per word
	}
	if wordy(body) || hasUUID(body) {
		return 0, 0, false
	}
	hi := end
	for k := 0; k < 2 && hi < len(s) && s[hi] == '='; k++ {
		hi++
	}
	if hi < len(s) && hi == end {
		switch c := s[hi]; {
		case isAlnum(c), c == '@':
			return 0, 0, false
		case c == '.' && hi+1 < len(s) && isAlpha(s[hi+1]):
			return 0, 0, false // a host name or a dotted path
		case (c == '"' || c == '\'') && hi+1 < len(s) && s[hi+1] == ':':
			return 0, 0, false // a JSON object key
		}
	}
	if isPlaceholder(s[a:hi]) || idKeyBefore(s, a) {
		return 0, 0, false
	}
	return a, hi, true
}

// entropyCounts is entropy over byte counts of n bytes.
func entropyCounts(counts []uint16, n int) float64 {
	h := 0.0
	fn := float64(n)
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / fn
			h -= p * math.Log2(p)
		}
	}
	return h
}

// idKeyBefore reports whether the value starting at a is given to a key named as an identifier
// (idKeyName): "id": "v", tool_call_id: v, requestId=v, x-request-id: v, "ids": ["v" (the
// separator between them: quotes, blanks, ':', '=', '[' and ',', at most 6 bytes).
func idKeyBefore(s string, a int) bool {
	j := a
	for j > 0 && a-j < 6 && strings.IndexByte("\"' \t:=[", s[j-1]) >= 0 {
		j--
	}
	if j == a || j < 2 {
		return false
	}
	k := j
	for k > 0 && j-k < 64 && (isAlnum(s[k-1]) || s[k-1] == '_' || s[k-1] == '-' || s[k-1] == '.') {
		k--
	}
	return idKeyName(s[k:j])
}

// idKeyName reports whether a key names an identifier: id, ids, or a name whose last word is
// id (tool_call_id, x-request-id, gen_ai.response.id, requestId, messageID).
func idKeyName(name string) bool {
	name = strings.TrimSuffix(strings.TrimSuffix(name, "s"), "S")
	n := len(name)
	if n < 2 || !strings.EqualFold(name[n-2:], "id") {
		return false
	}
	if n == 2 {
		return true
	}
	c := name[n-3]
	return c == '_' || c == '-' || c == '.' || (name[n-2] == 'I' && name[n-1] == 'd' && c >= 'a' && c <= 'z') ||
		(name[n-2] == 'I' && name[n-1] == 'D')
}

// dropIDShapes removes from fs the prefixed_token findings that take the whole value (n bytes)
// of a key named as an identifier (idKeyName): a JSON member or an attribute such as
// "id": "chatcmpl-..." or gen_ai.response.id, whose key the scan of the value alone does not see.
// The clean cache then holds the value as clean: met again under another key, it is the id it
// was.
func dropIDShapes(key string, fs []Finding, n int) []Finding {
	if len(fs) == 0 || !idKeyName(key) {
		return fs
	}
	out := fs[:0:0]
	for _, f := range fs {
		if f.Rule == RulePrefixedToken && f.Start == 0 && f.End == n {
			continue
		}
		out = append(out, f)
	}
	return out
}

// looseShapeRuns calls f for each run of bytes [A-Za-z0-9_.=-] at least shapeTokenLen long
// holding a '_', '-' or '.', or standing after ':', a blank or a '\\' (the separators of a pair,
// tokenPair and pairedSecret, raw or escaped as \n), or after a quote that is not a JSON
// string's own (', `, \": quotedPair's literals in code held in a string): a superset, in raw JSON bytes, of the
// tokens scanPrefixedTokens finds in any string leaf (their bytes need no escape; an escape
// before one, such as \n, only lengthens the raw run, and \u escapes are hot on their own).
func looseShapeRuns(s string, f func(lo, hi int)) {
	longRuns(s, shapeTokenLen, looseShapeSet, func(lo, hi int) {
		if strings.ContainsAny(s[lo:hi], "_-.") || lo > 0 && strings.IndexByte(": \t\\", s[lo-1]) >= 0 || looseQuotedPair(s, lo, hi) {
			f(lo, hi)
		}
	})
}

// looseQuotedPair: the run s[lo:hi] of raw JSON bytes stands after a quote that is not a JSON
// string's own (', `, \") and next to a ',' (blanks and \n, \t, \r escapes between): before
// it, as the second literal of quotedPair's pair, or after its closing quote, as the first.
func looseQuotedPair(s string, lo, hi int) bool {
	if lo < 1 {
		return false
	}
	o := lo - 1
	switch q := s[o]; {
	case q == '\'' || q == '`':
	case q == '"' && o > 0 && s[o-1] == '\\':
		o--
	default:
		return false
	}
	// backwards from the opening quote
	k := o
	for n := 0; k > 0 && n < 64; n++ {
		if c := s[k-1]; c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			k--
		} else if k > 1 && s[k-2] == '\\' && (c == 'n' || c == 't' || c == 'r') {
			k -= 2
		} else {
			break
		}
	}
	if k > 0 && s[k-1] == ',' {
		return true
	}
	// forwards from the closing quote
	k = hi
	for k < len(s) && s[k] == '=' {
		k++
	}
	if k < len(s) && s[k] == '\\' {
		k++
	}
	if k >= len(s) || s[k] != s[lo-1] {
		return false
	}
	k++
	for n := 0; k < len(s) && n < 64; n++ {
		if c := s[k]; c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			k++
		} else if c == '\\' && k+1 < len(s) && (s[k+1] == 'n' || s[k+1] == 't' || s[k+1] == 'r') {
			k += 2
		} else {
			break
		}
	}
	return k < len(s) && s[k] == ','
}

func looseShapeByte(c byte) bool { return isShapeByte(c) || c == '.' || c == '=' }

// looseEncodedRuns calls f for the run of base64 bytes before each '=' (up to
// maxEncodedToken+1 bytes): a superset, in raw JSON bytes, of what scanEncodedTokens finds in any
// string leaf ('/' may be written \/ in JSON: that escape is hot on its own).
func looseEncodedRuns(s string, f func(lo, hi int)) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return
		}
		q := i + j
		lo := q
		for lo > i && q-lo <= maxEncodedToken && isStdB64Byte(s[lo-1]) {
			lo--
		}
		if q-lo >= encodedMinRun {
			f(lo, min(len(s), q+2))
		}
		i = q + 1
	}
}

// wordy: more than half of the letters of v stand in runs of 5 or more lower-case letters, as
// in names made of words (SponsoredProductsRemoteSearch); in random base62 about one letter in
// twenty does, and 1 in 2,000 strings of 40 is wordy.
func wordy(v string) bool {
	letters, inWords, run := 0, 0, 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] >= 'a' && v[i] <= 'z' {
			run++
			letters++
			continue
		}
		if run >= 5 {
			inWords += run
		}
		run = 0
		if i < len(v) && v[i] >= 'A' && v[i] <= 'Z' {
			letters++
		}
	}
	return inWords*2 > letters
}

// hasUUID: v holds a UUID (8-4-4-4-12 hex digits): a name derived from an id, not a token.
func hasUUID(v string) bool {
	for i := 0; i+36 <= len(v); i++ {
		if v[i+8] == '-' && uuidShaped(v[i:i+36]) {
			return true
		}
	}
	return false
}

// maxEncodedToken bounds the base64 run scanEncodedTokens decodes: tokens are shorter, and a
// longer run (an image, a file) is not looked at.
const maxEncodedToken = 1024

// encodedMinRun is the fewest base64 bytes before the padding of an encoded token of shape.
const encodedMinRun = 4*((shapeTokenLen+2)/3) - 2

func isStdB64Byte(c byte) bool { return isAlnum(c) || c == '+' || c == '/' }

// scanEncodedTokens calls f for each padded base64 value (standard alphabet, ending in '=' or
// '==') of at most maxEncodedToken bytes that decodes to a token of shape (prefixedToken on the
// decoded text, which must be all token bytes): a token stored base64-encoded, as Kubernetes
// secrets and CI variables hold them. The '=' bytes are found with IndexByte.
func scanEncodedTokens(s string, f func(lo, hi int)) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return
		}
		q := i + j
		hi := q + 1
		if hi < len(s) && s[hi] == '=' {
			hi++
		}
		i = hi
		lo := q
		for lo > 0 && q-lo <= maxEncodedToken && isStdB64Byte(s[lo-1]) {
			lo--
		}
		if q-lo < encodedMinRun || q-lo > maxEncodedToken || (hi-lo)%4 != 0 || (lo > 0 && !shapeBoundaryBefore(s[lo-1])) {
			continue
		}
		if hi < len(s) && (isShapeByte(s[hi]) || s[hi] == '=') {
			continue
		}
		var buf [maxEncodedToken]byte
		src := unsafe.Slice(unsafe.StringData(s[lo:hi]), hi-lo) // read only: Decode does not write src
		n, err := base64.StdEncoding.Decode(buf[:], src)
		if err != nil || n < shapeTokenLen {
			continue
		}
		d := string(buf[:n])
		p := strings.IndexAny(d, "_-.")
		if p < 0 || shapeRunEnd(d, p+1) != n || strings.IndexFunc(d[:p], func(r rune) bool { return r > 127 || !isAlnum(byte(r)) }) >= 0 {
			continue
		}
		if _, _, ok := prefixedToken(d, 0, p, n); ok {
			f(lo, hi)
		}
	}
}

// publicPrefix: the prefix says the key is public (pk, pub, public: the publishable keys of
// payment and analytics vendors, written to pages on purpose), which is not a credential.
func publicPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "pk", "pub", "public":
		return true
	}
	return false
}

// hexPrefixedToken checks the candidate of scanPrefixedTokens (prefix s[a:p], separator s[p],
// run end) as a token with a hexadecimal body: rubygems_<48 hex>, packagist_ack_<28 hex>,
// dop_v1_<64 hex>, PMAK-<24 hex>-<34 hex>. By its body alone such a token is a content hash or an
// id (the corpus recordings carry msg_, fc_, req_, resp_, trace_, cmpl-, chat- and pyd_ai_ before
// 32 to 50 hex digits, thousands of times), so the prefix must say credential, as an id's
// prefix does not:
//   - it is all upper-case letters, 3 to 10 of them (PMAK: ids are written in lower case), or
//   - it is 6 to 10 lower-case letters naming a product, not an id (hexIDWords: session,
//     message, commit, sha256 ...; the id prefixes of the recordings are 2 to 5 letters), and the
//     body is not one hex part of a digest's length (digestLength: release-<40 hex> is a git
//     commit, backup_<64 hex> a SHA-256; rubygems_<48 hex> is neither) unless a credential word
//     stands before it on its line (credentialWordBefore: mailgun_token: pubkey-<32 hex>), or
//   - a version part follows it (dop_v1_: a versioned token format).
//
// Between the prefix and the hex parts stand at most two short parts (ack, v1: 1 to 4 letters
// and digits); the hex parts hold 24 or more hex digits in all, with letters (of one case, as
// an encoder writes them) and digits, no counting run of 8 and at least 3.0 bits per byte (32
// random hex digits average 3.8). The end boundary and the placeholder and id-key checks are
// those of prefixedToken.
func hexPrefixedToken(s string, a, p, end int) (int, int, bool) {
	pre := s[a:p]
	if len(pre) < 2 || len(pre) > shapeMaxPrefix || (a > 0 && !shapeBoundaryBefore(s[a-1])) || s[p] == '.' {
		return 0, 0, false
	}
	lower, upper, other := 0, 0, 0
	for i := 0; i < len(pre); i++ {
		switch c := pre[i]; {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		default:
			other++
		}
	}
	upperPre := upper >= 3 && lower == 0 && other == 0
	wordPre := lower >= 6 && upper == 0 && other == 0 && !hexIDWords[pre]
	mayVersion := other == 0 && (lower == 0 || upper == 0) && p+2 < end && (s[p+1] == 'v' || s[p+1] == 'V') && s[p+2] >= '0' && s[p+2] <= '9'
	if !upperPre && !wordPre && !mayVersion {
		return 0, 0, false // the common case (msg_, resp_, snake_case names): no split, no allocation
	}
	parts := strings.FieldsFunc(s[p+1:end], func(r rune) bool { return r == '_' || r == '-' })
	lead := 0
	for lead < len(parts) && lead < 2 && len(parts[lead]) <= 4 && !allHex(parts[lead]) {
		lead++
	}
	versioned := lead > 0 && len(parts[0]) >= 2 && (parts[0][0] == 'v' || parts[0][0] == 'V') && isDigits(parts[0][1:])
	switch {
	case upperPre:
	case wordPre && (lead > 0 || len(parts) != 1 || !digestLength(len(parts[0])) || credentialWordBefore(s, a)):
	case versioned && mayVersion:
	default:
		return 0, 0, false
	}
	hexParts := parts[lead:]
	if len(hexParts) == 0 || len(hexParts) > 3 {
		return 0, 0, false
	}
	var counts [128]uint16
	n, letters, digits, hexLower, hexUpper := 0, 0, 0, false, false
	for _, h := range hexParts {
		if !allHex(h) || ascendingRun(strings.ToLower(h)) >= 8 {
			return 0, 0, false
		}
		for i := 0; i < len(h); i++ {
			if h[i] >= 'a' {
				hexLower = true
			} else if h[i] >= 'A' {
				hexUpper = true
			}
			c := h[i] | 0x20
			counts[c]++
			n++
			if c >= 'a' {
				letters++
			} else {
				digits++
			}
		}
	}
	if n < 24 || letters == 0 || digits == 0 || hexLower && hexUpper || entropyCounts(counts[:], n) < 3.0 {
		return 0, 0, false
	}
	hi := end
	if hi < len(s) {
		switch c := s[hi]; {
		case isAlnum(c), c == '@', c == '=':
			return 0, 0, false
		case c == '.' && hi+1 < len(s) && isAlpha(s[hi+1]):
			return 0, 0, false
		case (c == '"' || c == '\'') && hi+1 < len(s) && s[hi+1] == ':':
			return 0, 0, false
		}
	}
	if isPlaceholder(s[a:hi]) || idKeyBefore(s, a) {
		return 0, 0, false
	}
	return a, hi, true
}

// hexIDWords are lower-case words of 6 or more letters that prefix ids and digests with a hex
// body, not credentials.
var hexIDWords = map[string]bool{"session": true, "request": true, "message": true, "thread": true, "commit": true, "object": true,
	"checkpoint": true, "sha256": true, "sha512": true, "digest": true, "upload": true, "attachment": true, "response": true,
	"completion": true, "report": true, "record": true, "account": true, "customer": true, "product": true, "invoice": true,
	"payment": true, "build": true, "deploy": true, "deployment": true, "artifact": true, "version": true, "revision": true,
	"snapshot": true, "document": true, "content": true, "chunk": true, "vector": true, "embedding": true, "cache": true,
	"blob": true, "image": true, "file": true, "folder": true, "project": true, "workspace": true, "assistant": true, "run": true}

func allHex(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isHex(v[i]) {
			return false
		}
	}
	return v != ""
}

func isDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

// pairedSecret checks the run s[lo:hi] (letters and digits only, at least shapeTokenLen bytes)
// as the secret half of an access key pair written id first: an access key id of 16 to
// maxAccessKeyID upper-case letters and digits, then ':' or blanks holding at most one newline,
// then the secret (AKIA...:<40>, AK/SK pairs of cloud providers, GCS HMAC keys, as they sit in
// config dumps and CI logs). Alone neither half is a credential by shape (the id is upper-case
// alphanumerics, the secret a random run like many a base64 blob); together they are. The
// secret, up to 64 bytes, holds lower and upper case and digits at 3.0 bits per byte or more
// (looksRandom's floor); the id starts with a letter, holds 4 or more of each of letters and
// digits, is not all hexadecimal digits (an upper-case digest), and stands after a boundary. The secret may go on before and
// past the run with '+' and '/' (base64), to 64 bytes in all; one of its stretches between them
// must be a run longRuns reports (33 bytes or more). It returns the spans of the id and of the
// secret.
// maxAccessKeyID is the longest access key id of a pair (pairedSecret): ids run from 16 to 32
// bytes (AWS AKIA... 20, Alibaba and Huawei 20 to 24) up to the 61 of a Google Cloud Storage
// HMAC key of a service account (cloud.google.com/storage/docs/authentication/hmackeys: "61
// characters in length" for a service account, 24 for a user account).
const maxAccessKeyID = 64

// maxJoinedKeyID bounds the id of a pair on one line (id:secret, id secret): there the longer
// ids need their own line (the id, a newline, the secret, as the HMAC key's download and config
// files give them). Joined on one line, a longer upper-case run and a random run are the near
// misses Veles' gcshmackey and awsaccesskey tests keep (WRONG984R...:<40>, 61 bytes), which the
// score's negatives hold unchanged.
const maxJoinedKeyID = 32

func pairedSecret(s string, lo, hi int) (int, int, int, int, bool) {
	if lo < 17 || hi-lo > 64 {
		return 0, 0, 0, 0, false
	}
	for lo > 17 && hi-lo < 64 && isStdB64Byte(s[lo-1]) {
		lo--
	}
	for hi < len(s) && hi-lo < 64 && isStdB64Byte(s[hi]) {
		hi++
	}
	if hi < len(s) && (isStdB64Byte(s[hi]) || s[hi] == '_' || s[hi] == '-' || s[hi] == '.') {
		return 0, 0, 0, 0, false // longer than a secret of a pair, or a name
	}
	j, nl := lo, 0
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t' || s[j-1] == '\n' || s[j-1] == '\r') {
		if s[j-1] == '\n' {
			nl++
		}
		j--
	}
	if j == lo {
		if s[j-1] != ':' {
			return 0, 0, 0, 0, false
		}
		j--
	} else if nl > 1 {
		return 0, 0, 0, 0, false
	}
	e := j
	for j > 0 && e-j <= maxAccessKeyID && ((s[j-1] >= 'A' && s[j-1] <= 'Z') || (s[j-1] >= '0' && s[j-1] <= '9')) {
		j--
	}
	id := s[j:e]
	if len(id) < 16 || len(id) > maxAccessKeyID || !isAlpha(id[0]) || (j > 0 && (isShapeByte(s[j-1]) || s[j-1] == '.' || s[j-1] == '/')) ||
		allHex(id) || (len(id) > maxJoinedKeyID && nl == 0) {
		return 0, 0, 0, 0, false
	}
	letters, digits := 0, 0
	for i := 0; i < len(id); i++ {
		if isAlpha(id[i]) {
			letters++
		} else {
			digits++
		}
	}
	if letters < 4 || digits < 4 {
		return 0, 0, 0, 0, false
	}
	sec := s[lo:hi]
	if l, u, d := charClasses(sec); !l || !u || !d || entropy(sec) < 3.0 || isPlaceholder(sec) || isPlaceholder(id) {
		return 0, 0, 0, 0, false
	}
	return j, e, lo, hi, true
}

// Token pairs (tokenPair): the bounds of each half and the floor of its entropy.
const (
	pairMinHalf    = 32
	pairMaxHalf    = 128
	pairMinEntropy = 4.0
)

// tokenPair checks the run s[lo:hi] as the second half of two random tokens joined by one ':'
// with nothing around them: <half>:<half>, each 32 to 128 bytes of [A-Za-z0-9_-] (base64url,
// base62) holding lower and upper case and digits at shapeMinEntropy (4.0 bits per byte) or
// more, with no counting run of 8, no words (wordy), no UUID, not all hexadecimal and no
// placeholder marker. That is how key pairs and id/secret pairs are printed and pasted when no
// name goes with them: a web-push (VAPID) key pair as private:public (43 and 87 bytes of
// base64url), an OAuth consumer key and secret, a client id and secret before they are
// base64-encoded for basic auth. One random token is a blob like any other; two joined by ':'
// are a credential's two parts. The pair starts and ends at a boundary (shapeBoundaryBefore; not
// followed by a letter, a digit, ':', '@' or '.' and a letter): not a segment of a longer
// ':'-joined list, a URL's userinfo (url_credentials has it) or a host. It returns the spans of
// both halves.
func tokenPair(s string, lo, hi int) (int, int, int, int, bool) {
	if lo < pairMinHalf+1 || s[lo-1] != ':' {
		return 0, 0, 0, 0, false
	}
	for hi > lo && s[hi-1] == '=' {
		hi--
	}
	if hi-lo < pairMinHalf || hi-lo > pairMaxHalf || strings.IndexByte(s[lo:hi], '.') >= 0 || strings.IndexByte(s[lo:hi], '=') >= 0 {
		return 0, 0, 0, 0, false
	}
	if k := hi; k < len(s) && s[k] != '=' && (isAlnum(s[k]) || s[k] == ':' || s[k] == '@' || (s[k] == '.' && k+1 < len(s) && isAlpha(s[k+1]))) {
		return 0, 0, 0, 0, false
	}
	e := lo - 1
	j := e
	for j > 0 && e-j <= pairMaxHalf && isShapeByte(s[j-1]) {
		j--
	}
	if e-j < pairMinHalf || e-j > pairMaxHalf || (j > 0 && (!shapeBoundaryBefore(s[j-1]) || s[j-1] == ':')) {
		return 0, 0, 0, 0, false
	}
	if !randomHalf(s[j:e]) || !randomHalf(s[lo:hi]) {
		return 0, 0, 0, 0, false
	}
	return j, e, lo, hi, true
}

// randomHalf: v holds lower and upper case and digits, at pairMinEntropy bits per byte or more,
// with no counting run of 8, no words, no UUID and no placeholder marker, and is not all
// hexadecimal (a digest).
func randomHalf(v string) bool {
	l, u, d := charClasses(v)
	return l && u && d && !allHex(v) && entropy(v) >= pairMinEntropy && ascendingRun(strings.ToLower(v)) < 8 && !wordy(v) &&
		!hasUUID(v) && !isPlaceholder(v)
}

// digestLength: n hex digits are the length of a common digest or hash id (MD5 and UUIDs without
// dashes 32, SHA-1 and git 40, SHA-224 56, SHA-256 64, SHA-384 96, SHA-512 128).
func digestLength(n int) bool {
	switch n {
	case 32, 40, 56, 64, 96, 128:
		return true
	}
	return false
}

// credentialWordBefore reports whether a credential word (genericKeywords, as credentialWordAt
// reads it: apiKey, MAILGUN_TOKEN, not monkey) stands in the 64 bytes before a on its line.
func credentialWordBefore(s string, a int) bool {
	lo := max(0, a-64)
	if nl := strings.LastIndexByte(s[lo:a], '\n'); nl >= 0 {
		lo += nl + 1
	}
	var buf [64]byte
	l := string(appendLowerASCII(buf[:0], []byte(s[lo:a]))) // same offsets as s; rare: only before a digest-length hex body
	for _, w := range genericKeywords {
		for i := 0; ; {
			j := strings.Index(l[i:], w)
			if j < 0 {
				break
			}
			if credentialWordAt(s, lo+i+j, lo+i+j+len(w)) {
				return true
			}
			i += j + 1
		}
	}
	return false
}

// charClasses reports whether v holds an ASCII lower-case letter, an upper-case one and a digit.
func charClasses(v string) (lower, upper, digit bool) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	return lower, upper, digit
}

// quotedPair checks the run s[lo:hi] as one half of two random tokens written as consecutive
// string literals, 'A', 'B' or "A", "B" (quotes also JSON-escaped): the arguments of a call or
// the members of a tuple, setVapidDetails(subject, '<public>', '<private>'), new
// OAuth('<consumer key>', '<consumer secret>'), ("<client id>", "<secret>"). It is tokenPair's
// pair written as code writes it: each half 32 to 128 bytes of [A-Za-z0-9_-] that randomHalf
// accepts and that does not start as an id does (idLikePrefix: chatcmpl-, call_), the two
// separated by one ',' and blanks holding at most two newlines. Exactly two: a third random
// literal before or after them makes a list (of ids, hashes, nonces), not a pair, and a literal
// followed by ':' is an object's key. The run reported by longRuns (33 bytes or more) is tried
// as the second half and, when that one is shorter than a run, as the first. It returns the
// spans of both halves.
func quotedPair(s string, lo, hi int) (int, int, int, int, bool) {
	if lo < 1 {
		return 0, 0, 0, 0, false
	}
	q := s[lo-1]
	if q != '\'' && q != '"' && q != '`' {
		return 0, 0, 0, 0, false // the common case: no literal
	}
	for hi > lo && s[hi-1] == '=' {
		hi--
	}
	if hi >= len(s) || s[hi] != q && !(s[hi] == '\\' && hi+1 < len(s) && s[hi+1] == q) {
		return 0, 0, 0, 0, false
	}
	if hi-lo < pairMinHalf || hi-lo > pairMaxHalf || idLikePrefix(s[lo:hi]) || strings.IndexByte(s[lo:hi], '.') >= 0 || strings.IndexByte(s[lo:hi], '=') >= 0 {
		return 0, 0, 0, 0, false
	}
	// as the second half: the first ends before
	if a, b, ok := quotedBefore(s, lo-1, q); ok && !idLikePrefix(s[a:b]) && randomHalf(s[a:b]) && randomHalf(s[lo:hi]) &&
		!quotedRandomAfter(s, hi, q) && !quotedRandomBefore(s, a-1, q) {
		return a, b, lo, hi, true
	}
	// as the first half, when the second (32 bytes) is too short for longRuns to report it
	if c, d, ok := quotedAfter(s, hi, q); ok && d-c < shapeTokenLen && !idLikePrefix(s[c:d]) && randomHalf(s[c:d]) &&
		randomHalf(s[lo:hi]) && !quotedRandomAfter(s, d, q) && !quotedRandomBefore(s, lo-1, q) {
		return lo, hi, c, d, true
	}
	return 0, 0, 0, 0, false
}

// quotedBefore returns the literal quoted with q that ends before the opening quote at o of
// another, with one ',' and blanks (at most two newlines) between them: the span of its body
// (32 to 128 token bytes).
func quotedBefore(s string, o int, q byte) (int, int, bool) {
	b, e, ok := quotedBeforeAny(s, o, q)
	if !ok || e-b < pairMinHalf || e-b > pairMaxHalf || b < 1 || s[b-1] != q {
		return 0, 0, false
	}
	return b, e, true
}

// quotedBeforeAny is the run of token bytes (8 or more, at most pairMaxHalf+1) that ends at a
// quote q before the opening quote at o, a ',' and blanks between: quotedBefore's walk without its
// bounds or opening quote.
func quotedBeforeAny(s string, o int, q byte) (int, int, bool) {
	j := o
	if j > 0 && s[j-1] == '\\' {
		j--
	}
	j, ok := skipListSep(s, j, -1)
	if !ok || j < 1 || s[j-1] != q {
		return 0, 0, false
	}
	e := j - 1
	if e > 0 && s[e-1] == '\\' {
		e--
	}
	b := e
	for b > 0 && e-b <= pairMaxHalf && isShapeByte(s[b-1]) {
		b--
	}
	return b, e, e-b >= 8
}

// quotedAfter returns the literal quoted with q that follows the closing quote at c (a ',' and
// blanks between): the span of its body (32 to 128 token bytes), closed by q.
func quotedAfter(s string, c int, q byte) (int, int, bool) {
	a, b, ok := quotedAfterAny(s, c, q)
	if !ok || b-a < pairMinHalf || b-a > pairMaxHalf || b >= len(s) || (s[b] != q && !(s[b] == '\\' && b+1 < len(s) && s[b+1] == q)) {
		return 0, 0, false
	}
	return a, b, true
}

// skipListSep moves from i (dir -1: backwards from i, dir 1: forwards from i) over blanks, one
// ',' and blanks again, with at most two newlines and 64 bytes: where the next element of a
// list starts (forwards) or where the one before ends (backwards). ok is false without the ','.
func skipListSep(s string, i, dir int) (int, bool) {
	comma, nl, start := false, 0, i
	for n := 0; n < 64; n++ {
		k := i
		if dir < 0 {
			k = i - 1
		}
		if k < 0 || k >= len(s) {
			break
		}
		c := s[k]
		switch {
		case c == ',' && !comma:
			comma = true
		case c == '\n':
			if nl++; nl > 2 {
				return 0, false
			}
		case c == ' ' || c == '\t' || c == '\r':
		default:
			return i, comma && i != start
		}
		i += dir
	}
	return i, false
}

// quotedRandomAfter: after the closing quote at c comes ':' (the literal is an object's key) or
// another literal quoted with q that randomHalf accepts (a list).
func quotedRandomAfter(s string, c int, q byte) bool {
	j := c + 1
	if s[c] == '\\' {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j < len(s) && s[j] == ':' {
		return true
	}
	a, b, ok := quotedAfterAny(s, c, q)
	return ok && randomHalf(s[a:b])
}

// quotedAfterAny is quotedAfter for a literal of any length of token bytes (8 or more).
func quotedAfterAny(s string, c int, q byte) (int, int, bool) {
	j := c + 1
	if s[c] == '\\' {
		j++
	}
	j, ok := skipListSep(s, j, 1)
	if !ok || j >= len(s) {
		return 0, 0, false
	}
	if s[j] == '\\' && j+1 < len(s) {
		j++
	}
	if s[j] != q {
		return 0, 0, false
	}
	a := j + 1
	b := a
	for b < len(s) && b-a <= pairMaxHalf && isShapeByte(s[b]) {
		b++
	}
	return a, b, b-a >= 8
}

// quotedRandomBefore: before the opening quote at o stands another literal quoted with q, of 8
// or more token bytes, that randomHalf accepts (the pair is part of a list).
func quotedRandomBefore(s string, o int, q byte) bool {
	b, e, ok := quotedBeforeAny(s, o, q)
	return ok && randomHalf(s[b:e])
}

// idLikePrefix: v starts as the ids of providers do, 2 to 10 letters and digits of one case and
// '_' or '-' (chatcmpl-..., call_..., toolu_...): an id, not one half of a key pair.
func idLikePrefix(v string) bool {
	p := strings.IndexAny(v, "_-")
	if p < 2 || p > shapeMaxPrefix {
		return false
	}
	l, u, _ := charClasses(v[:p])
	return !(l && u)
}
