// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"math"
	"net/netip"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// validators maps custom-rule validator names to checks on the replaced value.
var validators = map[string]func(string) bool{
	ValidatorNone:   func(string) bool { return true },
	ValidatorLuhn:   luhnValid,
	ValidatorMod97:  ibanValid,
	ValidatorPhone:  phoneValid,
	ValidatorIP:     ipValid,
	ValidatorSecret: func(s string) bool { return !isPlaceholder(s) },
}

// luhnValid reports whether the digits of s (other characters ignored) pass the Luhn check.
func luhnValid(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n > 0 && sum%10 == 0
}

// creditCardValid: 12 to 19 digits, Luhn, not one repeated digit, a known issuer first digit.
func creditCardValid(s string) bool {
	digits := 0
	var first, prev byte
	same := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		if digits == 0 {
			first = c
		} else if c != prev {
			same = false
		}
		prev = c
		digits++
	}
	if digits < 12 || digits > 19 || same {
		return false
	}
	// 0, 8 and 9 start no payment card numbers in use.
	if first == '0' || first == '8' || first == '9' {
		return false
	}
	return luhnValid(s)
}

// ssnValid applies the SSA rules: area not 000, 666 or 9xx; group not 00; serial not 0000.
func ssnValid(s string) bool {
	d := make([]byte, 0, 9)
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			d = append(d, s[i])
		}
	}
	if len(d) != 9 {
		return false
	}
	area, group, serial := string(d[:3]), string(d[3:5]), string(d[5:])
	if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
		return false
	}
	return true
}

func ipValid(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	if a.Is4() {
		// loopback, link-local and unspecified addresses identify no one
		return !a.IsUnspecified() && !a.IsLoopback() && !a.IsLinkLocalUnicast()
	}
	// IPv6: require at least 3 groups so "a::b" in code is not taken; reject "::".
	return !a.IsUnspecified() && strings.Count(s, ":") >= 2 && !a.IsLoopback()
}

// phoneRegions are tried, in order, for numbers written without an international prefix.
var phoneRegions = []string{"US", "GB", "DE", "FR", "IT", "ES", "NL", "BE", "CH", "AT", "SE", "NO", "DK", "FI",
	"PL", "CZ", "HU", "PT", "IE", "AU", "NZ", "CA", "IN", "BR", "MX", "ZA", "IL", "JP", "CN", "RU", "UY", "EE", "IS"}

// phoneValid reports whether s is a phone number. Numbers with "+" or "00" must be valid for their
// country calling code; national numbers must be valid in one of phoneRegions, or possible there and
// written with phone-like grouping (separators between digit groups).
func phoneValid(s string) bool {
	digits := 0
	body := s
	if i := strings.IndexAny(s, "xX#"); i > 0 {
		body = s[:i]
	}
	groups := 0
	inDigits := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c >= '0' && c <= '9' {
			digits++
			if !inDigits {
				groups++
			}
			inDigits = true
		} else {
			inDigits = false
		}
	}
	if digits < 7 || digits > 15 {
		return false
	}
	t := strings.TrimSpace(body)
	if strings.HasPrefix(t, "+") || strings.HasPrefix(t, "00") {
		num, err := phonenumbers.Parse(t, "ZZ")
		if err == nil && phonenumbers.IsPossibleNumber(num) {
			return true
		}
		if strings.HasPrefix(t, "+") {
			return false
		}
	}
	for _, region := range phoneRegions {
		num, err := phonenumbers.Parse(t, region)
		if err != nil {
			continue
		}
		if phonenumbers.IsValidNumberForRegion(num, region) {
			return true
		}
		if groups >= 2 && phonenumbers.IsPossibleNumber(num) {
			return true
		}
	}
	return false
}

// placeholderSubstrings mark a template or example wherever they occur: no generated credential
// contains them.
var placeholderSubstrings = []string{"placeholder", "redacted", "changeme", "change_me", "replace_me", "replaceme",
	"your_", "your-", "yourkey", "${", "{{", "}}", "****", "####", "•••"}

// placeholderWords mark an example when they are a whole word of a value that has no random part:
// "test_openai_api_key", "your-api-key-here", "dummy-token", but not "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
// or a key that merely contains the letters "test".
var placeholderWords = map[string]bool{"test": true, "testing": true, "dummy": true, "fake": true, "example": true,
	"sample": true, "placeholder": true, "redacted": true, "changeme": true, "replace": true, "insert": true,
	"here": true, "your": true, "my": true, "foo": true, "bar": true, "baz": true, "xxx": true, "todo": true, "tbd": true,
	"filtered": true, "masked": true, "hidden": true, "omitted": true, "removed": true, "none": true, "null": true,
	"secret": true, "password": true, "token": true, "key": true, "api": true, "value": true, "mock": true}

// isPlaceholder reports whether v is an obvious non-credential, recognised by its shape: a
// template (<...>, ${...}, {{...}}, #{...}, %(name)s, $VAR, %VAR%), an elided value ("sk-...",
// "xxx", "****"), a value made only of words with an example word among them ("test_openai_api_key",
// "your-api-key-here"), an environment variable name (OPENAI_API_KEY), an example word glued to a
// counting run ("AKIATEST1234567890AB"), one repeated character or a filler run of one, too short, or a token
// this package made.
func isPlaceholder(v string) bool {
	if len(v) < 4 || isToken(v) {
		return true
	}
	n := len(v)
	first, last := v[0], v[n-1]
	switch {
	case first == '<' && last == '>',
		first == '{' && last == '}',
		first == '[' && last == ']' && !strings.ContainsAny(v[1:n-1], "[]"),
		first == '%' && last == '%',
		first == '@' && last == '@',
		strings.HasPrefix(v, "#{") && last == '}',
		strings.HasPrefix(v, "%(") && last == 's',
		first == '$' && isIdent(v[1:]),
		strings.HasSuffix(v, "...") || strings.HasSuffix(v, "…"):
		return true
	}
	l := strings.ToLower(v)
	for _, m := range placeholderSubstrings {
		if strings.Contains(l, m) {
			return true
		}
	}
	if strings.Contains(v, "xxx") || strings.Contains(v, "XXX") || strings.Contains(v, "...") || isEnvVarName(v) || dominantByte(v) {
		return true
	}
	// an example word glued to a counting run: AKIATEST1234567890AB, AKIAEXAMPLE1234567
	if ascendingRun(l) >= 7 && (strings.Contains(l, "test") || strings.Contains(l, "example") || strings.Contains(l, "fake") ||
		strings.Contains(l, "dummy") || strings.Contains(l, "sample")) {
		return true
	}
	return exampleWords(v)
}

// exampleWords: v split at non-alphanumerics is a sequence of words, one of which is a
// placeholderWord, and no part looks generated (8+ characters mixing letters and digits, or with
// 3 bits of entropy per byte or more).
func exampleWords(v string) bool {
	marker := false
	start := 0
	for i := 0; i <= len(v); i++ {
		split := i == len(v) || !isAlnum(v[i])
		if !split {
			continue
		}
		if i > start {
			w := v[start:i]
			if placeholderWords[strings.ToLower(w)] {
				marker = true
			} else if len(w) >= 8 && (hasLetterAndDigit(w) || entropy(w) >= 3.0) {
				return false
			}
		}
		start = i
		if i < len(v) && !isAlnum(v[i]) {
			start = i + 1
		}
	}
	return marker
}

func hasLetterAndDigit(w string) bool {
	l, d := false, false
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= '0' && c <= '9':
			d = true
		case isAlpha(c):
			l = true
		}
	}
	return l && d
}

// ascendingRun returns the length of the longest run of consecutive ascending bytes ("12345").
func ascendingRun(v string) int {
	best, run := 1, 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1]+1 && isAlnum(v[i]) {
			run++
			best = max(best, run)
		} else {
			run = 1
		}
	}
	return best
}

// dominantByte: v is one repeated character ("aaaaaaaa"), or holds a filler run of one
// character of 16 or more ("glc_1111111111111111111111").
func dominantByte(v string) bool {
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] {
			run++
			if run >= 16 {
				return true
			}
		} else {
			run = 1
		}
	}
	return run == len(v)
}

func isIdent(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isAlnum(v[i]) && v[i] != '_' {
			return false
		}
	}
	return true
}

// isEnvVarName: upper case letters, digits and at least one underscore, like OPENAI_API_KEY.
func isEnvVarName(v string) bool {
	us := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_':
			us = true
		default:
			return false
		}
	}
	return us && v[0] >= 'A' && v[0] <= 'Z'
}

// entropy returns the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// isToken reports whether v is a replacement this package made ("rule:<12 hex>"), so that
// redacting redacted data changes nothing.
func isToken(v string) bool {
	i := strings.LastIndexByte(v, ':')
	if i < 1 || len(v)-i-1 != 12 || !ruleNameRE.MatchString(v[:i]) {
		return false
	}
	for _, c := range []byte(v[i+1:]) {
		if !isHex(c) || (c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// phoneValidStrict: v is a valid number (phone metadata, not only a possible length) in one of
// phoneRegions.
func phoneValidStrict(v string) bool {
	for _, region := range phoneRegions {
		if num, err := phonenumbers.Parse(v, region); err == nil && phonenumbers.IsValidNumberForRegion(num, region) {
			return true
		}
	}
	return false
}

// placeholderIn reports whether v, the secret a rule with the literal prefixes kw matched, is a
// placeholder: formatPlaceholder when v starts with one of kw that marks a format (formatPrefix),
// isPlaceholder otherwise.
func placeholderIn(v string, kw []string) bool {
	for _, k := range kw {
		if formatPrefix(k) && len(v) > len(k) && strings.EqualFold(v[:len(k)], k) {
			return formatPlaceholder(v[len(k):])
		}
	}
	return isPlaceholder(v)
}

// formatPrefix reports whether a rule keyword is an issuer's token prefix (sk_live_, SG., A3-,
// glpat-, ops_eyJ): 3 bytes or more with a byte that is not a letter, so that a word (key,
// token, eyJ) never counts as one.
func formatPrefix(k string) bool {
	return len(k) >= 3 && strings.ContainsFunc(k, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
}

// formatPlaceholder reports whether body, what follows an issuer's prefix in a match of its
// token format (sk_live_<body>), is a placeholder anyway. The prefix names the value a
// credential as explicitly as KEY=VALUE does, so, as there (issue 33), only the placeholders the
// issue lets pass are left: a template (<your-key>, ${VAR}, {{ x }}), an elision (xxxx, ****,
// "..."), a marker no credential holds (placeholder, changeme, redacted, your_...), words that
// name the credential with no digit (my-bot-token), an environment variable name, or a token
// this package made. A filler of another byte
// (sk_live_aaaa...), an example word or a counting run after a live prefix is taken: in a
// debugging store a kept credential is the costlier mistake.
func formatPlaceholder(body string) bool {
	if body == "" || isToken(body) || isEnvVarName(body) {
		return true
	}
	n := len(body)
	first, last := body[0], body[n-1]
	switch {
	case first == '<' && last == '>', first == '{' && last == '}', first == '%' && last == '%',
		strings.HasSuffix(body, "...") || strings.HasSuffix(body, "…"):
		return true
	}
	l := strings.ToLower(body)
	for _, m := range placeholderSubstrings {
		if strings.Contains(l, m) {
			return true
		}
	}
	if strings.Contains(l, "xxx") || strings.Contains(body, "...") || strings.Contains(body, "<") && strings.Contains(body, ">") {
		return true
	}
	// words that name the credential, with no digit: xoxb-my-bot-token, sk-your-key-here
	return strings.ContainsAny(body, "-_ ") && exampleWords(body) && !strings.ContainsFunc(body, func(r rune) bool { return r >= '0' && r <= '9' })
}
