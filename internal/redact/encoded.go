// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/base64"
	"unsafe"
)

// RuleEncodedCredential finds a credential held base64-encoded inside a JSON document: a
// Kubernetes Secret's data, a Docker config's auths, a CI variable, a keyset or a service
// account file passed as one opaque string ({"primaryKeyId": ..., "key": [{"keyData": {...,
// "value": "GhB..."}}]} as eyJwcmltYXJ5S2V5SWQiOj...). No rule reads the encoded bytes; once
// decoded, the document is text like any other, and the rules that are on (the context rules,
// the generic detector, any family's) find what it holds. The whole encoded run is taken when
// they find a secret in it. Like the detectors of shape it knows no family: it finds what the
// other rules find, encoded.
//
// A candidate is a run of base64 (standard or URL alphabet, padding allowed) of
// encodedJSONMin to maxEncodedJSON bytes that starts, at a boundary, as an encoded JSON object
// or array does: eyJ ({"), eyAi ({ "), ewog ({ and a newline and blanks), ewoJ ({, a newline and
// a tab), W3s ([{). JWT segments (a run next to a '.') are left to the JWT rule: their JSON is
// a header and claims. The decoded bytes must be text (no control byte but \t \n \r).
const RuleEncodedCredential = "encoded_credential"

// encodedJSONKeywords trigger encodedScan (the keyword automaton runs over lower-cased text).
var encodedJSONKeywords = []string{"eyj", "eyai", "ewog", "ewoj", "w3s"}

// Bounds of the encoded run encodedScan decodes: shorter, it holds no credential beside its
// name; longer (a file, an image), it is not looked at.
const (
	encodedJSONMin = 64
	maxEncodedJSON = 16 << 10
)

func isB64Any(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// encodedScan checks a keyword match at [a, b) of s as the start of a base64-encoded JSON
// document holding a secret (see RuleEncodedCredential) and returns the encoded run's span.
func (r *Redactor) encodedScan(s string, a, b int) (int, int, bool) {
	switch {
	case s[a] == 'e' && s[a+1] == 'y' && (s[a+2] == 'J' || s[a+2] == 'A' && s[a+3] == 'i'),
		s[a] == 'e' && s[a+1] == 'w' && s[a+2] == 'o' && (s[a+3] == 'g' || s[a+3] == 'J'),
		s[a] == 'W' && s[a+1] == '3' && s[a+2] == 's':
	default:
		return 0, 0, false // another case: EYJ, Ewog
	}
	if a > 0 && (isB64Any(s[a-1]) || s[a-1] == '.') {
		return 0, 0, false
	}
	e, url := a, false
	for e < len(s) && e-a <= maxEncodedJSON && isB64Any(s[e]) {
		if s[e] == '-' || s[e] == '_' {
			url = true
		}
		e++
	}
	n := e - a
	if n < encodedJSONMin || n > maxEncodedJSON {
		return 0, 0, false
	}
	hi := e
	for k := 0; k < 2 && hi < len(s) && s[hi] == '='; k++ {
		hi++
	}
	if hi < len(s) && (s[hi] == '.' || isB64Any(s[hi]) || s[hi] == '=') {
		return 0, 0, false // a JWT's header or claims, or a longer run
	}
	if n%4 == 1 {
		n-- // a stray byte: the rest decodes
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	buf := make([]byte, enc.DecodedLen(n))
	src := unsafe.Slice(unsafe.StringData(s[a:a+n]), n) // read only: Decode does not write src
	m, err := enc.Decode(buf, src)
	if err != nil {
		return 0, 0, false
	}
	for _, c := range buf[:m] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return 0, 0, false // binary: a protobuf, an image
		}
	}
	for _, f := range r.find(unsafe.String(unsafe.SliceData(buf), m), nil, false) {
		if f.Category == CategorySecret {
			return a, hi, true
		}
	}
	return 0, 0, false
}
