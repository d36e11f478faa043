// SPDX-License-Identifier: Apache-2.0

package redact

import "strings"

// RuleHighEntropyValue is a random-looking value that a configuration line or a constant gives to
// a name no credential word marks (scanAssignedEntropy): detect-secrets finds such values by
// entropy alone (its Base64HighEntropyString plugin, limit 4.5 bits per byte); runagain only
// where the line is written as configuration writes literals, so that code and prose keep their
// ids, hashes and encoded data.
const RuleHighEntropyValue = "high_entropy_value"

// Bounds of scanAssignedEntropy's values.
const (
	// assignedEntropyMin is detect-secrets' default limit for base64 strings, in bits per byte.
	assignedEntropyMin = 4.5
	// assignedMinLen and assignedMaxLen bound the value in bytes: a 32-byte random base64 string
	// reaches 4.5 bits per byte about half the time, and keys are rarely longer than 256.
	assignedMinLen = 32
	assignedMaxLen = 256
)

// scanAssignedEntropy calls f for each value of 32 to 256 base64 or base64url bytes (padding
// included) given to a name on a line of its own, with upper- and lower-case letters and digits
// and a Shannon entropy of at least 4.5 bits per byte:
//   - NAME=VALUE, nothing around the '=', the line being just that (an env file: detect-secrets'
//     config.env, `mimi=gX69...`), also after "export ";
//   - NAME = 'VALUE' or "VALUE" with NAME in capitals (a constant: SUPER_SEECRET_VALUE = 'c3Vw...').
//
// A name about what the value is (aboutCredential: _ID, _URL, _PATH; or holding hash, sha, md5,
// sum, digest, integrity, etag, commit, uuid, nonce, salt, fingerprint, cursor, image, data,
// icon) keeps its value: content hashes, ids and encoded data are written so too. A UUID, a
// value of one case or without digits, and a value a rule of its own would read (a JWT, "eyJ")
// are left to other rules.
func scanAssignedEntropy(s string, f func(lo, hi int)) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return
		}
		q := i + j
		i = q + 1
		if lo, hi, ok := assignedValue(s, q); ok {
			f(lo, hi)
			i = hi
		}
	}
}

// isAnyB64Byte: a byte of the standard or the URL-safe base64 alphabet (padding aside).
func isAnyB64Byte(c byte) bool { return isStdB64Byte(c) || c == '-' || c == '_' }

// assignedValue checks the '=' at q of s as scanAssignedEntropy describes and returns the value.
func assignedValue(s string, q int) (int, int, bool) {
	// the name, and the blanks before the '='
	ne := q
	for ne > 0 && s[ne-1] == ' ' {
		ne--
	}
	spaced := ne < q
	ns := ne
	for ns > 0 && ne-ns < 64 && (isAlnum(s[ns-1]) || s[ns-1] == '_') {
		ns--
	}
	if ns == ne || !isAlpha(s[ns]) && s[ns] != '_' {
		return 0, 0, false
	}
	// the name starts its line (indentation and "export " aside)
	if _, ok := lineStart(s, len(strings.TrimSuffix(s[:ns], "export "))); !ok {
		return 0, 0, false
	}
	name := s[ns:ne]
	// the value: quoted after " = " in a constant, unquoted right after the '='
	va := q + 1
	for va < len(s) && s[va] == ' ' {
		va++
	}
	var quote byte
	if va < len(s) && (s[va] == '\'' || s[va] == '"') {
		quote = s[va]
		va++
	}
	if quote == 0 && (spaced || va != q+1) {
		return 0, 0, false // "a = b" unquoted: code
	}
	if (spaced || va > q+2) && strings.ToUpper(name) != name {
		return 0, 0, false // a spaced assignment counts only to a constant
	}
	vb := va
	for vb < len(s) && vb-va <= assignedMaxLen && isAnyB64Byte(s[vb]) {
		vb++
	}
	pad := vb
	for pad < len(s) && pad-vb < 2 && s[pad] == '=' {
		pad++
	}
	if n := vb - va; n < assignedMinLen || n > assignedMaxLen {
		return 0, 0, false
	}
	// the rest of the line: the closing quote, blanks, a comment
	e := pad
	if quote != 0 {
		if e >= len(s) || s[e] != quote {
			return 0, 0, false
		}
		e++
	}
	for e < len(s) && (s[e] == ' ' || s[e] == '\t' || s[e] == '\r') {
		e++
	}
	if e < len(s) && s[e] != '\n' && s[e] != '#' {
		return 0, 0, false
	}
	v := s[va:vb]
	if !randomValue(v) || aboutCredential(name) != "" || dataName(name) {
		return 0, 0, false
	}
	return va, pad, true
}

// randomValue: upper- and lower-case letters and digits, not a UUID or a JWT, and an entropy of at
// least assignedEntropyMin.
func randomValue(v string) bool {
	lower, upper, digit := charClasses(v)
	if !lower || !upper || !digit || strings.HasPrefix(v, "eyJ") || hasUUID(v) {
		return false
	}
	return entropy(v) >= assignedEntropyMin
}

// dataName: a name whose value is data rather than a credential (a content hash, an id, encoded
// content).
func dataName(name string) bool {
	l := strings.ToLower(name)
	for _, w := range []string{"hash", "sha", "md5", "sum", "digest", "integrity", "etag", "commit", "uuid", "guid", "nonce", "salt",
		"fingerprint", "thumbprint", "cursor", "image", "img", "data", "icon", "logo", "font", "avatar", "checksum", "revision",
		"build", "version", "trace", "span", "request", "session", "page"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// looseAssignedRuns calls f for each '=' followed, within a blank and a quote (raw JSON may
// write it \" or \'), by a run of at least assignedMinLen base64 or base64url bytes: a superset,
// in raw JSON bytes, of what scanAssignedEntropy finds in any string leaf ('/' written \/ is
// hot on its own).
func looseAssignedRuns(s string, f func(lo, hi int)) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return
		}
		q := i + j
		i = q + 1
		v := q + 1
		for v < len(s) && v-q <= 4 && (s[v] == ' ' || s[v] == '\\' || s[v] == '"' || s[v] == '\'') {
			v++
		}
		e := v
		for e < len(s) && e-v < assignedMinLen && isAnyB64Byte(s[e]) {
			e++
		}
		if e-v >= assignedMinLen {
			f(q, e)
			i = e
		}
	}
}
