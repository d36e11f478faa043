// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"regexp"
	"strings"
)

// The honest denominator of the leave-one-family-out recall (README, "Secret detection").
//
// Many of Veles' test values are written by hand to look fake (FakeLooking: aaaa…, XXXX,
// test123…, abcdef0123…). Such a value is judged by where it stands:
//
//   - in an explicit credential context (ExplicitContext: KEY=VALUE, "key": "value", key: value
//     with a credential word in the key) the context wins (issue 33): the value is the secret
//     whatever it looks like, so it counts, unless it is one of the placeholders the issue names
//     (IssuePlaceholder: xxxx, a filler, <your-key>, ${VAR}, changeme, "placeholder");
//   - without such a context (a bare value in a test table) nothing but its shape says it is a
//     credential, and the shape of a counting run, a filler or an example word is what the
//     generic detectors leave alone by design (base64 alphabets in code, ids, docs): it does
//     not count. Its own rule finds it (recall with a rule).
//
// Scored (Honest) are the values that do not look fake plus the fake-looking ones in an
// explicit context that are not placeholders.

// explicitContextRE matches the end of the text before a value given to a credential name:
// NAME=, NAME: , "name": ", NAME => , with optional quotes (also JSON-escaped ones) around the
// name and the value. The name holds a credential word.
var explicitContextRE = regexp.MustCompile(`(?i)[a-z0-9_.\-]*(?:key|token|secret|password|passwd|pwd|auth|credential)[a-z0-9_.\-]*(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:\\?["'])?$`)

// ExplicitContext reports whether some occurrence of secret in text follows a credential name
// in an assignment on its line (explicitContextRE).
func ExplicitContext(text, secret string) bool {
	if secret == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], secret)
		if j < 0 {
			return false
		}
		a := i + j
		lo := max(0, a-96)
		if nl := strings.LastIndexByte(text[lo:a], '\n'); nl >= 0 {
			lo += nl + 1
		}
		if explicitContextRE.MatchString(text[lo:a]) {
			return true
		}
		i = a + len(secret)
	}
}

// IssuePlaceholder reports whether v is one of the placeholders issue 33 lets pass even in an
// explicit context: an elision (xxxx, ****), a filler of one byte repeated 6 times or more
// (aaaaaa, as FakeLooking counts it), a template (<your-key>, ${VAR}, {{ x }}), or a marker word
// (placeholder, changeme, your_, your-).
func IssuePlaceholder(v string) bool {
	l := strings.ToLower(v)
	for _, m := range []string{"xxx", "***", "placeholder", "changeme", "your_", "your-", "${", "{{", "<"} {
		if strings.Contains(l, m) {
			return true
		}
	}
	same := 1
	for i := 1; i < len(l); i++ {
		if l[i] == l[i-1] {
			if same++; same >= 6 {
				return true
			}
		} else {
			same = 1
		}
	}
	return false
}

// Honest reports whether a positive example counts in the honest denominator: its value does not
// look fake, or it sits in an explicit credential context and is not a placeholder the issue
// lets pass.
func Honest(e Example) bool {
	if !ExampleFakeLooking(e) {
		return true
	}
	return ExplicitContext(e.Text, e.Secret) && !IssuePlaceholder(e.Secret)
}
