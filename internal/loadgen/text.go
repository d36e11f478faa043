// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"math/rand/v2"
	"strconv"
)

// vocabulary of the generated prose; plain ASCII so message sizes are byte-exact.
var vocabulary = []string{
	"the", "agent", "order", "customer", "invoice", "please", "check", "status", "of", "my",
	"account", "refund", "shipping", "address", "update", "report", "quarterly", "revenue",
	"analysis", "table", "query", "result", "found", "records", "matching", "search", "for",
	"weather", "forecast", "tomorrow", "meeting", "schedule", "calendar", "summary", "document",
	"policy", "contract", "clause", "section", "error", "retry", "timeout", "service", "deploy",
	"version", "release", "notes", "feature", "request", "ticket", "priority", "high", "low",
	"and", "with", "from", "into", "about", "this", "that", "which", "could", "would", "should",
	"data", "pipeline", "latency", "throughput", "database", "index", "cache", "memory", "token",
	"model", "prompt", "answer", "question", "context", "window", "budget", "cost", "user",
}

var alnum = []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
var upperDigits = []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
var firstNames = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
var domains = []string{"example.com", "mail.example.org", "corp.example.net", "acme.example"}

// PIIKinds and SecretKinds are the kinds planted in text; tests read them back.
var (
	PIIKinds    = []string{"email", "phone", "credit_card", "iban"}
	SecretKinds = []string{"openai_api_key", "aws_access_key_id", "github_token"}
)

// text is a generator of message text drawing from one session's random stream.
type text struct {
	rng        *rand.Rand
	piiRate    float64
	secretRate float64
	// planted counts what was inserted (for reports and tests).
	planted map[string]int
}

// prose appends about n bytes of words to dst and, with the configured probabilities, one PII
// value and one credential at random word boundaries.
func (t *text) prose(dst []byte, n int) []byte {
	start := len(dst)
	pii := t.piiRate > 0 && t.rng.Float64() < t.piiRate
	sec := t.secretRate > 0 && t.rng.Float64() < t.secretRate
	// positions (in bytes from start) at which to plant them
	piiAt, secAt := -1, -1
	if pii {
		piiAt = t.rng.IntN(n)
	}
	if sec {
		secAt = t.rng.IntN(n)
	}
	for len(dst)-start < n {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		pos := len(dst) - start
		switch {
		case pii && pos >= piiAt:
			pii = false
			dst = t.appendPII(dst)
		case sec && pos >= secAt:
			sec = false
			dst = t.appendSecret(dst)
		default:
			dst = append(dst, vocabulary[t.rng.IntN(len(vocabulary))]...)
		}
	}
	// a planted value that did not fit before the size was reached goes at the end
	if pii {
		dst = t.appendPII(append(dst, ' '))
	}
	if sec {
		dst = t.appendSecret(append(dst, ' '))
	}
	return dst
}

func (t *text) count(kind string) {
	if t.planted != nil {
		t.planted[kind]++
	}
}

func (t *text) appendPII(dst []byte) []byte {
	kind := PIIKinds[t.rng.IntN(len(PIIKinds))]
	t.count(kind)
	switch kind {
	case "email":
		dst = append(dst, firstNames[t.rng.IntN(len(firstNames))]...)
		dst = append(dst, '.')
		dst = strconv.AppendInt(dst, int64(t.rng.IntN(9000)+100), 10)
		dst = append(dst, '@')
		return append(dst, domains[t.rng.IntN(len(domains))]...)
	case "phone":
		// a US number in the 202 (Washington DC) area: +1 202 555 01xx style but a real exchange
		dst = append(dst, "+1 202 "...)
		dst = strconv.AppendInt(dst, int64(t.rng.IntN(800)+200), 10)
		dst = append(dst, ' ')
		return appendDigits(dst, t.rng, 4)
	case "credit_card":
		return appendCard(dst, t.rng)
	default:
		return appendIBAN(dst, t.rng)
	}
}

func (t *text) appendSecret(dst []byte) []byte {
	kind := SecretKinds[t.rng.IntN(len(SecretKinds))]
	t.count(kind)
	switch kind {
	case "openai_api_key":
		dst = append(dst, "sk-proj-"...)
		return appendFrom(dst, t.rng, alnum, 48)
	case "aws_access_key_id":
		dst = append(dst, "AKIA"...)
		return appendFrom(dst, t.rng, upperDigits, 16)
	default:
		dst = append(dst, "ghp_"...)
		return appendFrom(dst, t.rng, alnum, 36)
	}
}

func appendFrom(dst []byte, rng *rand.Rand, set []byte, n int) []byte {
	for range n {
		dst = append(dst, set[rng.IntN(len(set))])
	}
	return dst
}

func appendDigits(dst []byte, rng *rand.Rand, n int) []byte {
	for range n {
		dst = append(dst, byte('0'+rng.IntN(10)))
	}
	return dst
}

// appendCard appends a 16-digit Visa-style number in groups of four that passes the Luhn check.
func appendCard(dst []byte, rng *rand.Rand) []byte {
	var d [16]int
	d[0] = 4
	for i := 1; i < 15; i++ {
		d[i] = rng.IntN(10)
	}
	d[15] = luhnCheckDigit(d[:15])
	for i, v := range d {
		if i > 0 && i%4 == 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, byte('0'+v))
	}
	return dst
}

// luhnCheckDigit returns the digit that makes payload+digit pass the Luhn check.
func luhnCheckDigit(payload []int) int {
	sum := 0
	double := true // the check digit is not doubled, so the last payload digit is
	for i := len(payload) - 1; i >= 0; i-- {
		v := payload[i]
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return (10 - sum%10) % 10
}

// LuhnValid reports whether the digits of s (other characters ignored) pass the Luhn check.
func LuhnValid(s string) bool {
	sum, n := 0, 0
	double := false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		v := int(c - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
		n++
	}
	return n >= 12 && sum%10 == 0
}

// appendIBAN appends a German IBAN (DE, 22 characters) with valid ISO 7064 mod-97 check digits.
func appendIBAN(dst []byte, rng *rand.Rand) []byte {
	var bban [18]byte
	for i := range bban {
		bban[i] = byte('0' + rng.IntN(10))
	}
	// check digits: 98 - (BBAN + "DE00" as digits) mod 97; D=13, E=14
	rem := 0
	for _, c := range bban {
		rem = (rem*10 + int(c-'0')) % 97
	}
	for _, v := range []int{1, 3, 1, 4, 0, 0} {
		rem = (rem*10 + v) % 97
	}
	check := 98 - rem
	dst = append(dst, 'D', 'E', byte('0'+check/10), byte('0'+check%10))
	return append(dst, bban[:]...)
}

// IBANValid reports whether s (no spaces) passes the ISO 7064 mod-97 check.
func IBANValid(s string) bool {
	if len(s) < 15 {
		return false
	}
	r := s[4:] + s[:4]
	rem := 0
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
