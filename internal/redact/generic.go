// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
)

// Explicit credential contexts, the generic detector and password hashes (issue 33).
//
// An explicit context names its value a credential: KEY=VALUE and "key": "value" with a
// credential key (sensitiveKey), a URL's userinfo, an Authorization header. There the value is
// the secret whatever it looks like; only explicit placeholders pass (explicitPlaceholder).
//
// The generic detector (RuleGenericCredential) finds a credential of a family no rule knows:
// a credential-shaped value (credentialShaped: length, character classes, Shannon entropy) right
// after a credential word (key, token, secret, password, passwd, pwd, auth, bearer, credential)
// in the spellings of env vars, JSON keys, YAML, HTTP headers, CLI flags and prose. It runs only
// where the keyword automaton (Aho-Corasick, shared with every keyword rule) found one of those
// words, as gitleaks runs a rule only near its keywords.

// RuleGenericCredential is the generic detector; RulePasswordHash finds password hashes;
// RuleBlockValue is the value of a credential name written on the indented lines below it
// (blockValueScan).
const (
	RuleGenericCredential = "generic_credential"
	RulePasswordHash      = "password_hash"
	RuleBlockValue        = "block_value"
)

// blockValueScan finds the value of a credential name (sensitiveKey) that ends its line with "="
// or ":" and gives its value on the more indented lines below, an explicit context in the two
// configuration forms that write values so:
//   - an INI multi-line value (Python's configparser, detect-secrets' short_files/last_line.ini):
//     "secrets =" then indented lines, each a part of the one value; the lines up to the first
//     blank or less indented one are taken as one span;
//   - a YAML mapping of one member (Travis CI's "password:" then "secure: <ciphertext>",
//     detect-secrets' short_files/middle_line.yml): the member's value is taken unless its name
//     is about a credential (aboutCredential: secretName, key_id) or names a person (user,
//     username, login, email).
//
// The keyword at [a, b) of s is one of passwordKeyKeywords. A name that only holds a credential
// word (SECRETS_FOR_NO_ONE_TO_FIND, a weak name) needs a line of 8 bytes or more with letters
// and digits; any other value passes unless it is a placeholder (explicitPlaceholder).
func blockValueScan(s string, a, b int) (int, int, bool) {
	lo := nameStart(s, a)
	i := b
	for i < len(s) && i-b < 48 && (isAlnum(s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '.') {
		i++
	}
	// the name starts its line; its indentation
	ls, ok := lineStart(s, lo)
	if !ok {
		return 0, 0, false
	}
	indent := lo - ls
	j, ok := keySeparator(s, i)
	if !ok {
		return 0, 0, false
	}
	yaml := s[j] == ':'
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r') {
		j++
	}
	if j >= len(s) || s[j] != '\n' {
		return 0, 0, false // a value on the line: password_key's
	}
	rule, weak, ok := sensitiveKey(s[lo:i])
	if !ok || rule != RulePasswordKey {
		return 0, 0, false
	}
	// the indented lines below, up to 1 KiB
	first, last, lines, strong := -1, -1, 0, !weak
	end := min(len(s), j+1024)
	for p := j + 1; p < end; {
		q := strings.IndexByte(s[p:end], '\n')
		if q < 0 {
			q = end - p
		}
		line := s[p : p+q]
		p += q + 1
		t := strings.TrimLeft(line, " \t")
		ind := len(line) - len(t)
		if t = strings.TrimRight(t, " \t\r"); ind <= indent || t == "" {
			break
		}
		va := p - q - 1 + ind
		vb := va + len(t)
		if c := t[0]; c == '#' || c == ';' {
			continue // a comment line inside the value
		}
		if yaml {
			k := strings.Index(t, ": ")
			if k <= 0 || lines > 0 {
				return 0, 0, false // a list, a literal block, or a mapping of more members
			}
			if name := strings.Trim(t[:k], `"'`); !isIdent(name) || aboutCredential(name) != "" || personKey(name) {
				return 0, 0, false
			}
			va += k + 2
			for va < vb && (s[va] == ' ' || s[va] == '"' || s[va] == '\'') {
				va++
			}
			for vb > va && (s[vb-1] == '"' || s[vb-1] == '\'') {
				vb--
			}
		}
		v := s[va:vb]
		if explicitPlaceholder(v) || strings.ContainsAny(v, " \t") {
			return 0, 0, false
		}
		if len(v) >= 8 && hasLetterAndDigit(v) {
			strong = true
		}
		if first < 0 {
			first = va
		}
		last = vb
		lines++
	}
	if first < 0 || !strong {
		return 0, 0, false
	}
	return first, last, true
}

// personKey: a member that names who holds the credential, not the credential.
func personKey(name string) bool {
	switch strings.ToLower(name) {
	case "user", "username", "user_name", "login", "email", "account", "owner":
		return true
	}
	return false
}

// explicitPlaceholder reports whether v, given in an explicit credential context, is not a
// credential: empty, a template (<your-key>, ${VAR}, {{ x }}, %VAR%, $VAR, #{x}, %(x)s), an
// elision (xxxx, ****, "sk-..."), a filler of one repeated byte, a value with a marker no
// credential holds (changeme, placeholder, redacted, your_...), a literal of a type (null, true),
// or a token this package made.
func explicitPlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	n := len(v)
	if n == 0 || isToken(v) || isBooleanOrNull(v) {
		return true
	}
	first, last := v[0], v[n-1]
	switch {
	case first == '<' && last == '>',
		first == '{' && last == '}',
		first == '%' && last == '%' && n > 2,
		first == '@' && last == '@' && n > 2,
		strings.HasPrefix(v, "#{") && last == '}',
		strings.HasPrefix(v, "%(") && last == 's',
		first == '$' && n > 1 && isIdent(v[1:]),
		strings.HasSuffix(v, "...") || strings.HasSuffix(v, "…"):
		return true
	}
	l := strings.ToLower(v)
	if explicitPlaceholderWords[strings.Trim(l, "[]()*_-. ")] {
		return true
	}
	for _, m := range placeholderSubstrings {
		if strings.Contains(l, m) {
			return true
		}
	}
	if strings.Contains(l, "xxx") || strings.Contains(v, "...") || dominantByte(v) {
		return true
	}
	if strings.ContainsAny(v, "-_ ") && exampleWords(v) && !strings.ContainsFunc(v, func(r rune) bool { return r >= '0' && r <= '9' }) {
		return true // words that name the credential: api-key, your-key-here
	}
	// an example word glued to a counting run: AKIATEST1234567890AB, AKIAEXAMPLE1234567
	return ascendingRun(l) >= 7 && (strings.Contains(l, "test") || strings.Contains(l, "example") || strings.Contains(l, "fake") ||
		strings.Contains(l, "dummy") || strings.Contains(l, "sample"))
}

// explicitPlaceholderWords, as a whole value, stand for a credential that is not there
// (FILTERED, [REDACTED], test); "secret" and "password" are not among them: in an explicit
// context they are the password.
var explicitPlaceholderWords = map[string]bool{"filtered": true, "redacted": true, "masked": true, "hidden": true, "omitted": true,
	"removed": true, "none": true, "null": true, "nil": true, "placeholder": true, "changeme": true, "dummy": true, "fake": true,
	"example": true, "sample": true, "test": true, "testing": true, "mock": true, "todo": true, "tbd": true, "foo": true, "bar": true,
	"baz": true, "insert": true, "replace": true, "here": true, "value": true, "undefined": true}

// configAssignment reports whether the unquoted value at [va, vb) of "key <op> value" in s is
// written the way configuration gives literals, not the way code refers to a variable: KEY=VALUE
// with nothing around the '=' (env files, connection strings, ini, CLI --flag=value), or a YAML
// "key: value" that starts its line and runs to its end. A value that repeats the key
// (password=password) or names a type is code in any form.
func configAssignment(s string, keyStart, keyEnd, va, vb int) bool {
	key, v := s[keyStart:keyEnd], s[va:vb]
	if strings.EqualFold(strings.Trim(key, "_-."), v) || strings.EqualFold(lastWord(key), v) {
		return false
	}
	op := strings.TrimSpace(s[keyEnd:va])
	op = strings.Trim(op, `"'`+"]")
	op = strings.TrimSpace(op)
	switch op {
	case "=":
		// KEY=VALUE: no blank before or after the '='
		if va == 0 || s[va-1] != '=' {
			return false
		}
		i := keyEnd
		for i < va && (s[i] == '"' || s[i] == '\'' || s[i] == ']') {
			i++
		}
		if s[i] != '=' {
			return false
		}
		// a keyword argument inside a call is code: f(user=user, password=pw)
		line := lineAround(s, keyStart, vb)
		lineStart := keyStart - strings.Index(line, s[keyStart:keyEnd])
		if lineStart >= 0 && lineStart <= keyStart && strings.Contains(s[lineStart:keyStart], "(") &&
			vb < len(s) && (s[vb] == ')' || s[vb] == ',') {
			return false
		}
		return true
	case ":":
		// YAML: the key starts its line (after indentation or a list dash) and the value ends it
		lo := keyStart
		for lo > 0 && (s[lo-1] == ' ' || s[lo-1] == '\t' || s[lo-1] == '-' || s[lo-1] == '"' || s[lo-1] == '\'') {
			lo--
		}
		if lo > 0 && s[lo-1] != '\n' {
			return false
		}
		j := vb
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r') {
			j++
		}
		return j == len(s) || s[j] == '\n' || s[j] == '#'
	}
	return false
}

// lastWord returns the last word of an identifier (DB_PASSWORD -> PASSWORD, dbPassword ->
// Password).
func lastWord(k string) string {
	i := strings.LastIndexAny(k, "_-.")
	if i >= 0 {
		return k[i+1:]
	}
	for j := len(k) - 1; j > 0; j-- {
		if k[j] >= 'A' && k[j] <= 'Z' && k[j-1] >= 'a' && k[j-1] <= 'z' {
			return k[j:]
		}
	}
	return k
}

// genericKeywords are the credential words that trigger the generic detector.
var genericKeywords = []string{"key", "token", "secret", "password", "passwd", "pwd", "auth", "bearer", "credential"}

// credentialWordAt reports whether the keyword at [a, b) of s is a credential word rather than
// part of another word (monkey, keyboard, author, tokenizer): the letter after it must not go on
// the word in lower case (key_id, apiKey and KEY= end it; keyboard does not).
func credentialWordAt(s string, a, b int) bool {
	if b < len(s) && s[b] >= 'a' && s[b] <= 'z' {
		w := strings.ToLower(s[a:b])
		// plurals and the common endings that keep the meaning: tokens, secrets, credentials, auths
		if s[b] == 's' && (b+1 == len(s) || !isAlpha(s[b+1])) {
			return true
		}
		if w == "auth" && strings.HasPrefix(strings.ToLower(s[b:min(len(s), b+5)]), "token") {
			return true
		}
		return false
	}
	if a > 0 {
		c := s[a-1]
		if c >= 'a' && c <= 'z' && !(s[a] >= 'A' && s[a] <= 'Z') { // a capital starts a camelCase word: coinbaseToken
			// glued to the end of a lower-case name: apikey, storagekey, oauth, bottoken; but not the
			// English words that end in a keyword (monkey, turkey, hotkey, pallbearer)
			w := strings.ToLower(s[max(0, a-10):b])
			for _, e := range wordsEndingInKeyword {
				if strings.HasSuffix(w, e) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// wordsEndingInKeyword are English words that end in a credential word without meaning one.
var wordsEndingInKeyword = []string{"monkey", "donkey", "turkey", "hockey", "jockey", "whiskey", "lackey", "hickey", "malarkey",
	"hotkey", "turnkey", "latchkey", "pallbearer", "flagbearer", "standardbearer"}

// genericScan is the generic detector's check of one keyword match at [a, b): the credential
// word, the rest of its name (api_key, X-Zorp-Auth, --token), then a separator (=, :, blanks,
// quotes, "is") and a credential-shaped value, which it returns.
func genericScan(s string, a, b int) (int, int, bool) {
	if !credentialWordAt(s, a, b) {
		return 0, 0, false
	}
	// the rest of the name after the word, then the separator: quotes, blanks, = : =>, and in
	// prose "is"
	i := b
	for i < len(s) && i-b < 32 && (isAlnum(s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '.') {
		i++
	}
	j, ok := genericSeparator(s, a, i)
	if !ok {
		return 0, 0, false
	}
	nested := false
	if j < len(s) && (s[j] == '{' || s[j] == '[' || s[j] == '\n' || s[j] == '\r') {
		if j, ok = nestedValue(s, j); !ok {
			return 0, 0, false
		}
		nested = true
	}
	if strings.HasPrefix(s[j:], "is ") || strings.HasPrefix(s[j:], "was ") {
		j = strings.IndexByte(s[j:], ' ') + j + 1
		for j < len(s) && (s[j] == ' ' || s[j] == '"' || s[j] == '\'' || s[j] == '`') {
			j++
		}
	}
	k := j
	for k < len(s) && k-j < 512 && isCredByte(s[k]) {
		k++
	}
	if k-j < 16 {
		return 0, 0, false // the common case: a word follows
	}
	if strings.HasSuffix(s[j:k], "..") {
		return 0, 0, false // elided: ops_eyJzaWdu..
	}
	// trailing punctuation of prose
	for k > j && (s[k-1] == '.' || s[k-1] == ',') {
		k--
	}
	if k < len(s) && isAlnum(s[k]) {
		return 0, 0, false // runs into something else
	}
	// the name around the word
	lo := nameStart(s, a)
	var buf [96]byte
	norm := buf[:0]
	for x := lo; x < i; x++ {
		c := s[x]
		if c == '_' || c == '-' || c == '.' {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		norm = append(norm, c)
	}
	name := string(norm)
	if suf := aboutCredential(s[lo:i]); suf != "" && !strings.HasSuffix(name, "token"+suf) {
		return 0, 0, false // key_id, SharedAccessKeyName, token_url: about a credential
	}
	if lookupKeyName(name) {
		return 0, 0, false // CACHE_KEY, sort_key: the key of a lookup
	}
	words := strings.ReplaceAll(strings.ReplaceAll(name, "account", "_"), "discount", "_") // not a count
	for _, w := range []string{"public", "csrf", "xsrf", "hash", "count", "limit", "usage"} {
		if strings.Contains(words, w) {
			return 0, 0, false
		}
	}
	v := s[j:k]
	explicit := nested && !bareCredentialName(name) || !nested && explicitGeneric(s, lo, i, j, k, name)
	if !credentialShaped(v, name) && !(explicit && explicitTokenShaped(v)) {
		return 0, 0, false
	}
	if genericAllowed(s[lo:k], lineAround(s, lo, k)) {
		return 0, 0, false
	}
	return j, k, true
}

// explicitGeneric reports whether the value at [j, k) after the credential name at [lo, i)
// stands in an explicit context (issue 33: the context wins over the looks of the value): an
// assignment (= or :) with the value quoted, or written as configuration gives literals
// (configAssignment: KEY=VALUE, a YAML line). The name must say more than the bare word: "key"
// and "token" alone name a map key and a tokenizer's token ({"key": "user_settings"},
// {"token": "Hello"}), CURSOR_KEY and secret_key a credential.
func explicitGeneric(s string, lo, i, j, k int, name string) bool {
	if bareCredentialName(name) {
		return false
	}
	sep := s[i:j]
	if !strings.ContainsAny(sep, "=:") || strings.Contains(sep, "==") {
		return false
	}
	if c := s[j-1]; c == '"' || c == '\'' || c == '`' {
		return k < len(s) && (s[k] == c || s[k] == '\\')
	}
	return configAssignment(s, lo, i, j, k)
}

// lookupKeyName: the name's only credential word is "key", and a word before it makes it a key of
// a lookup, not a credential (CACHE_KEY=v2_user_123456_profile, sort_key, idempotency_key,
// s3_object_key, i18n_key): such values are names and ids, however they are written.
func lookupKeyName(name string) bool {
	for _, w := range []string{"secret", "token", "password", "passwd", "pwd", "auth", "bearer", "credential", "apikey", "accesskey", "privatekey", "signingkey"} {
		if strings.Contains(name, w) {
			return false
		}
	}
	for _, w := range lookupKeyWords {
		if strings.Contains(name, w+"key") {
			return true
		}
	}
	return false
}

// lookupKeyWords name the keys of caches, stores, sorts and translations.
var lookupKeyWords = []string{"cache", "sort", "partition", "primary", "foreign", "idempotency", "dedup", "lookup", "routing",
	"shard", "range", "row", "index", "group", "order", "unique", "composite", "object", "map", "dict", "i18n", "translation",
	"locale", "message", "state", "list", "item", "redis", "kv", "config", "setting", "registry", "bucket", "s3", "storagepath",
	"hot", "short", "react", "query", "event", "label", "metric", "attribute", "header", "field", "column", "table", "record"}

// bareCredentialName: the name is a credential word alone, which names a map key, a tokenizer's
// token or an auth section as often as a credential.
func bareCredentialName(name string) bool {
	switch name {
	case "key", "keys", "token", "tokens", "auth":
		return true
	}
	return false
}

// nestedValue returns where the credential of a name whose value is a structure starts: the
// string of the "value" member of the object (or array of objects) that follows, at most two
// levels down and 512 bytes on ("keyData": {"typeUrl": "...", "value": "GhB..."}, a Tink
// keyset; "apiKey": {"value": "..."}, an ARM template parameter; quotes may be JSON-escaped), or
// the value of a "value:" line right below a YAML key (token:\n  value: PMAT-...).
func nestedValue(s string, j int) (int, bool) {
	end := min(len(s), j+512)
	if s[j] == '\n' || s[j] == '\r' {
		i := j
		for i < end && (s[i] == '\n' || s[i] == '\r') {
			i++
		}
		ind := i
		for i < end && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == ind || !strings.HasPrefix(s[i:end], "value:") {
			return 0, false
		}
		i += len("value:")
		for i < end && (s[i] == ' ' || s[i] == '\t' || s[i] == '"' || s[i] == '\'') {
			i++
		}
		return i, true
	}
	depth := 0
	for i := j; i < end; i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth <= 0 {
				return 0, false
			}
		case 'v':
			if depth > 2 || s[i-1] != '"' || !strings.HasPrefix(s[i:end], "value") {
				continue
			}
			k := i + len("value")
			if k < end && s[k] == '\\' {
				k++
			}
			if k >= end || s[k] != '"' {
				continue
			}
			k++
			for k < end && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k >= end || s[k] != ':' {
				continue
			}
			k++
			for k < end && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k < end && s[k] == '\\' {
				k++
			}
			if k < end && s[k] == '"' {
				return k + 1, true
			}
		}
	}
	return 0, false
}

// explicitTokenShaped is the shape a value in an explicit context must have (explicitGeneric):
// 16 to 512 bytes of the credential alphabet that are not an explicit placeholder
// (explicitPlaceholder: xxxx, a filler, <your-key>, changeme), a UUID, a dotted name, a path or
// a number, and read as a token rather than a name: letters and digits mixed
// (key_abcdef0123...), or a prefix of 2 to 10 letters and digits before '-' or '_' and a last
// part of at least 16 letters and digits (sk-pyx-testestest...). The counting runs, example
// words and low entropy that credentialShaped refuses do not count here: handwritten values
// given to a credential name are the credential. A whole alphabet (a-z in order) is the table of
// a coder, not a credential.
func explicitTokenShaped(v string) bool {
	n := len(v)
	if n < 16 || n > 512 || explicitPlaceholder(v) || uuidShaped(v) || isDottedRef(v) || strings.Contains(v, "//") || strings.Count(v, "/") > 2 {
		return false
	}
	if strings.Contains(strings.ToLower(v), "abcdefghijklmnopqrstuvwxyz") {
		return false // an alphabet: keyStr = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef...", the table of a base64 coder
	}
	letter, digit := false, false
	for x := 0; x < n; x++ {
		switch c := v[x]; {
		case isAlpha(c):
			letter = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	if !letter {
		return false
	}
	if digit {
		return true
	}
	p := strings.IndexAny(v, "-_")
	if p < 2 || p > 10 {
		return false
	}
	last := v[strings.LastIndexAny(v, "-_.")+1:]
	return len(last) >= 16 && !strings.ContainsFunc(last, func(r rune) bool { return r > 127 || !isAlnum(byte(r)) })
}

// genericSeparator returns where the value starts after a credential name ending at i (its word
// at a), and whether a separator was there: blanks and quotes around an assignment or a pair
// (=, :, =>, and the operators of code and makefiles: :=, ::=, ?=, .=, +=, ??=, ||=), a type
// between the name and its '=' (var apiToken string = "...", String apiToken = ...), the two
// arguments of a call or array pair ("API_TOKEN", "..."), or the text of an XML element
// (<apiToken>...</apiToken>, on the same line or the next).
func genericSeparator(s string, a, i int) (int, bool) {
	j, seps := i, 0
	blank := func() {
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
			seps++
		}
	}
	// an XML element named by the credential: the value is its text
	if lo := nameStart(s, a); lo > 0 && s[lo-1] == '<' && j < len(s) && s[j] == '>' {
		j++
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') && j-i < 64 {
			j++
		}
		return j, true
	}
	quoted := j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`')
	for j < len(s) && seps < 8 {
		c := s[j]
		if c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '=' || c == ':' || c == '>' || c == '`' {
			j++
			seps++
			continue
		}
		// a quote escaped in JSON-in-a-string: \"secret_key\": \"...\"
		if c == '\\' && j+1 < len(s) && s[j+1] == '"' {
			j += 2
			seps += 2
			continue
		}
		// the operator characters before an '=': .= ?= += ??= ||= &&=
		if (c == '.' || c == '?' || c == '+' || c == '|' || c == '&') && seps > 0 {
			o := j
			for o < len(s) && o-j < 3 && (s[o] == '.' || s[o] == '?' || s[o] == '+' || s[o] == '|' || s[o] == '&') {
				o++
			}
			if o < len(s) && s[o] == '=' && (o+1 == len(s) || s[o+1] != '=') {
				seps += o - j
				j = o
				continue
			}
		}
		// the second argument after a quoted name: ("API_TOKEN", "value")
		if c == ',' && quoted {
			j++
			seps++
			continue
		}
		break
	}
	if seps == 0 {
		return j, false
	}
	// a type between the name and its '=': var apiToken string = "..."
	if t := j; t < len(s) && isAlpha(s[t]) && s[t-1] == ' ' {
		for t < len(s) && t-j < 16 && (isAlnum(s[t]) || s[t] == '_' || s[t] == '[' || s[t] == ']' || s[t] == '*') {
			t++
		}
		if typeNames[s[j:t]] {
			save := j
			j = t
			blank()
			if j < len(s) && s[j] == '=' && (j+1 == len(s) || s[j+1] != '=') {
				j++
				blank()
				for j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`') {
					j++
				}
				return j, true
			}
			j = save
		}
	}
	return j, true
}

// typeNames are the string types a declaration names between a variable and its value.
var typeNames = map[string]bool{"string": true, "String": true, "str": true, "[]byte": true, "char*": true,
	"SecureString": true, "Secret": true, "SecretStr": true, "text": true}

// nameStart returns where the identifier holding the keyword at a starts.
func nameStart(s string, a int) int {
	lo := a
	for lo > 0 && a-lo < 48 && (isAlnum(s[lo-1]) || s[lo-1] == '_' || s[lo-1] == '-' || s[lo-1] == '.') {
		lo--
	}
	return lo
}

func isCredByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c == '~'
}

// credentialShaped scores v as a generated credential: 16 to 512 bytes of the credential
// alphabet, not a placeholder, a path, a dotted name, a number, a UUID or a content hash; at
// least two character classes among lower, upper and digits with a digit or both cases; and
// Shannon entropy of at least 3.2 bits per byte (3.0 below 20 bytes). Pure hexadecimal needs a
// name that says token, secret, password or auth (a bare "key" over 32 hex digits is an id or
// a digest).
func credentialShaped(v, name string) bool {
	n := len(v)
	if n < 16 || n > 512 || isPlaceholder(v) || strings.Contains(v, "//") || strings.Count(v, "/") > 2 {
		return false
	}
	var lower, upper, digit, hex = false, false, false, true
	for i := 0; i < n; i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		}
		if !isHex(c) {
			hex = false
		}
	}
	if !digit && !(lower && upper && mixedCase(v)) {
		return false // words: RootManageSharedAccessKey
	}
	if digit && !lower && !upper {
		return false // a number
	}
	if uuidShaped(v) || isDottedRef(v) || ascendingRun(strings.ToLower(v)) >= 8 {
		return false
	}
	if hex {
		strong := false
		for _, w := range []string{"token", "secret", "password", "passwd", "pwd", "auth", "bearer", "credential", "apikey", "accesskey"} {
			if strings.Contains(name, w) {
				strong = true
			}
		}
		if !strong {
			return false
		}
	}
	h := entropy(v)
	if n < 20 {
		return h >= 3.0
	}
	return h >= 3.2
}

// uuidShaped: 8-4-4-4-12 hexadecimal digits.
func uuidShaped(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if v[i] != '-' {
				return false
			}
		default:
			if !isHex(v[i]) {
				return false
			}
		}
	}
	return true
}

// passwordHashRE matches the common password-hash encodings (Modular Crypt Format and the
// framework forms): bcrypt $2a$/$2b$/$2x$/$2y$; argon2 $argon2id$/$argon2i$/$argon2d$; scrypt
// ($scrypt$ of passlib, $7$ of libsodium); SHA-crypt $5$/$6$; MD5-crypt $1$ and Apache $apr1$;
// PBKDF2 ($pbkdf2$, $pbkdf2-sha256$ of passlib, Django pbkdf2_sha256$/pbkdf2_sha1$); Django
// sha1$/md5$ salted hashes; PHPass $P$/$H$ (WordPress, phpBB). Formats: the passlib
// documentation (passlib.readthedocs.io, "Modular Crypt Format") and Django's
// contrib.auth.hashers.
const passwordHashRE = `\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}` +
	`|\$argon2(?:id|i|d)\$(?:v=\d+\$)?m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]{16,}={0,2}` +
	`|\$scrypt\$[^$\s"']{1,64}\$[A-Za-z0-9+/.]+={0,2}\$[A-Za-z0-9+/.]{16,}={0,2}` +
	`|\$7\$[./A-Za-z0-9]{11,64}\$[./A-Za-z0-9]{43}` +
	`|\$[56]\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43,86}` +
	`|\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}` +
	`|\$pbkdf2(?:-sha(?:1|256|512))?\$\d+\$[./A-Za-z0-9+]+={0,2}\$[./A-Za-z0-9+]{16,}={0,2}` +
	`|\bpbkdf2_sha(?:1|256)\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/]{20,}={0,2}` +
	`|\b(?:sha1|md5)\$[A-Za-z0-9]{1,64}\$[a-f0-9]{32,40}\b` +
	`|\$[PH]\$[./A-Za-z0-9]{31}`

var passwordHashKeywords = []string{"$2a$", "$2b$", "$2x$", "$2y$", "$argon2", "$scrypt$", "$7$", "$5$", "$6$", "$1$", "$apr1$",
	"$pbkdf2", "pbkdf2_sha", "sha1$", "md5$", "$p$", "$h$"}

// randomPart: a part of the dotted v is generated-looking (8+ bytes mixing letters and digits):
// hvs.CAESIJlU9kQ2bE8rT5wX is a token, process.env.API_KEY a reference.
func randomPart(v string) bool {
	for _, p := range strings.Split(v, ".") {
		if len(p) >= 8 && hasLetterAndDigit(p) {
			return true
		}
	}
	return false
}

// mixedCase: between a quarter and three quarters of the letters of v are upper case, as in a
// random mixed-case string (CamelCase words have one capital per word).
func mixedCase(v string) bool {
	up, letters := 0, 0
	for i := 0; i < len(v); i++ {
		if isAlpha(v[i]) {
			letters++
			if v[i] <= 'Z' {
				up++
			}
		}
	}
	return letters > 0 && up*4 >= letters && up*4 <= letters*3
}

// Issue33Rules names the rules added to generalise detection (issue 33): the generic detector,
// the detectors of shape (prefixed_token, url_token), password hashes and the Veles rule set.
// Benchmarks disable them for a baseline measured in the same run.
func Issue33Rules() []string {
	out := []string{RuleGenericCredential, RulePasswordHash, RulePrefixedToken, RuleURLToken, RuleGoogleOAuthClient, RuleNamedValue, RuleEncodedCredential, RuleBlockValue, RuleHighEntropyValue}
	for _, r := range velesData().Rules {
		out = append(out, r.ID)
	}
	return out
}
