// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"regexp"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Placeholders that Normalise puts in place of what changes from run to run.
const (
	PlaceholderQuoted = "<q>"    // a quoted value: "…", '…', `…`
	PlaceholderUUID   = "<uuid>" // 8-4-4-4-12 hex digits
	PlaceholderURL    = "<url>"  // scheme://…
	PlaceholderPath   = "<path>" // a file path: /a/b, ./a/b, C:\a\b, two or more segments
	PlaceholderEmail  = "<email>"
	PlaceholderHex    = "<hex>" // 0x…, or 8+ hex digits holding a digit and a letter
	PlaceholderID     = "<id>"  // a word of letters, digits, '_' or '-' that holds a digit (call_8f3k2, chatcmpl-9xYz, req-42)
	PlaceholderNumber = "<n>"   // digits, with a fraction or exponent
)

// MaxMessage bounds a normalised message (bytes, cut at a rune boundary): what follows is rarely
// what tells failures apart, and it bounds what the index stores per run.
const MaxMessage = 200

// The rules, applied in this order (an earlier rule's placeholder is not touched by a later one).
// need is what a string must hold for the rule to change it (any one of its bytes; all of
// needAll, in order), so
// a rule is not run on one that cannot match: the same results, without the regexp's cost at
// ingest, where every failing span's name and message are normalised (BENCHMARKS.md,
// "Signatures at ingest").
var normalisers = []struct {
	re      *regexp.Regexp
	with    string
	need    string
	needAll string
}{
	{regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`"), PlaceholderQuoted, "\"'`", ""},
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), PlaceholderUUID, "-", ""},
	{regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`), PlaceholderURL, "", "://"},
	{regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`), PlaceholderEmail, "@", ""},
	{regexp.MustCompile(`(?:\b[A-Za-z]:\\|\.{0,2}/)?(?:[\w.@%+-]+[/\\])+[\w.@%+-]+`), PlaceholderPath, "/\\", ""},
	{regexp.MustCompile(`(?:^|[\s(=:])/[\w.@%+-]+`), PlaceholderPath, "/", ""},
	// hex that holds no digit is kept (below); 0x… holds one
	{regexp.MustCompile(`\b0[xX][0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b`), PlaceholderHex, digits, ""},
	{regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*\b`), PlaceholderID, digits, ""},
	{regexp.MustCompile(`[-+]?\b[0-9]+(?:[.,][0-9]+)*(?:[eE][-+]?[0-9]+)?[a-zA-Z%]*\b`), PlaceholderNumber, digits, ""},
}

const digits = "0123456789"

// normalised remembers Normalise's results for strings of up to normaliseMemoMax bytes: the
// names and messages of a failure repeat from run to run, and Normalise is a pure function of
// its input (at most normaliseMemoSize entries, so at most 4 MiB of keys).
var normalised = func() *lru.Cache[string, string] {
	c, err := lru.New[string, string](normaliseMemoSize)
	if err != nil { // only for a size <= 0
		panic(err)
	}
	return c
}()

const (
	normaliseMemoSize = 4096
	normaliseMemoMax  = 1024
)

var spaces = regexp.MustCompile(`\s+`)

// Normalise returns s with what differs between runs of the same failure replaced by
// placeholders, in this order: quoted values (<q>), UUIDs (<uuid>), URLs (<url>), e-mail
// addresses (<email>), file paths of two or more segments or a rooted one (<path>), hex (<hex>:
// 0x…, or 8+ hex digits holding both a digit and a letter), ids (<id>: a word that starts
// with a letter and holds a digit, such as call_8f3k2 or req-42) and numbers (<n>, with a unit
// suffix such as 30s or 5ms); runs of
// white space become one space, the ends are trimmed and the result is cut to MaxMessage bytes.
// So "read_file: open /tmp/x/42.txt: no such file" and "read_file: open /var/y.txt: no such
// file" are both "read_file: open <path>: no such file". Words without digits (tool names, error
// words) are kept.
func Normalise(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > normaliseMemoMax {
		return normalise(s, true)
	}
	if n, ok := normalised.Get(s); ok {
		return n
	}
	n := normalise(s, true)
	normalised.Add(s, n)
	return n
}

// normalise is Normalise without the memo; filter false runs every rule whatever s holds (the
// prefilter's test).
func normalise(s string, filter bool) string {
	for _, n := range normalisers {
		if filter && (n.need != "" && !strings.ContainsAny(s, n.need) || n.needAll != "" && !strings.Contains(s, n.needAll)) {
			continue
		}
		if n.with == PlaceholderPath {
			s = n.re.ReplaceAllStringFunc(s, func(m string) string {
				if isPlaceholder(m) {
					return m
				}
				// keep the separator a rooted path was matched with
				if c := m[0]; c == ' ' || c == '\t' || c == '\n' || c == '(' || c == '=' || c == ':' {
					return m[:1] + PlaceholderPath
				}
				return PlaceholderPath
			})
			continue
		}
		s = n.re.ReplaceAllStringFunc(s, func(m string) string {
			if isPlaceholder(m) {
				return m
			}
			if n.with == PlaceholderHex && !strings.HasPrefix(m, "0x") && !strings.HasPrefix(m, "0X") &&
				(!strings.ContainsAny(m, "0123456789") || !strings.ContainsAny(m, "abcdefABCDEF")) {
				return m // all digits (a number, below) or all letters (a word)
			}
			return n.with
		})
	}
	if !filter || strings.ContainsAny(s, "\t\n\f\r") || strings.Contains(s, "  ") {
		s = spaces.ReplaceAllString(s, " ")
	}
	return cut(strings.TrimSpace(s), MaxMessage)
}

// isPlaceholder reports whether m is one of Normalise's placeholders (or holds only them), so a
// later rule does not rewrite an earlier one's.
func isPlaceholder(m string) bool {
	return strings.HasPrefix(m, "<") && strings.HasSuffix(m, ">") && !strings.ContainsAny(m[1:len(m)-1], "<> ")
}

// Route returns an HTTP target as a route: the path of a URL (query and fragment dropped) with
// each segment that Normalise changes replaced by its placeholder, so GET /v1/users/123/orders
// and GET /v1/users/456/orders are both /v1/users/<n>/orders; API versions (v1, v2beta1) are
// kept.
func Route(target string) string {
	p := target
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			p = p[j:]
		} else {
			p = "/"
		}
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || apiVersion.MatchString(s) {
			continue
		}
		if n := Normalise(s); n != s {
			segs[i] = n
		}
	}
	return cut(strings.Join(segs, "/"), MaxMessage)
}

// Field returns a divergence field path (runagain.replay.divergence.field, such as
// "body.messages[3].content") with its indexes replaced by [*] and its other parts normalised.
func Field(f string) string {
	f = indexes.ReplaceAllString(f, "[*]")
	return Normalise(f)
}

// apiVersion is a path segment kept as it is in a route: v1, v2beta1.
var apiVersion = regexp.MustCompile(`^v[0-9]+(?:(?:alpha|beta)[0-9]*)?$`)

var indexes = regexp.MustCompile(`\[[0-9]+\]`)

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n]
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
