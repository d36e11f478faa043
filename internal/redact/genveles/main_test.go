// SPDX-License-Identifier: Apache-2.0

package main

import (
	"regexp"
	"slices"
	"testing"
)

// TestKeywords: the literals every match must hold, lower-cased, without bytes JSON escapes;
// none when a branch has no literal of 3 bytes.
func TestKeywords(t *testing.T) {
	for re, want := range map[string][]string{
		`\b(AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16})\b`:                     {"akia", "asia"},
		`CCIPAT_[A-Za-z0-9]{22}_[0-9a-f]{40}`:                         {"ccipat_"},
		`(?s){\s*"primaryKeyId"\s*:\s*\d+`:                            {"primarykeyid"},
		`(?:hv[sb]|[sbr])\.[A-Za-z0-9_-]{24,}`:                        nil,
		`\b[A-Za-z0-9]{32}\b`:                                         nil,
		`(?i)\bclient[_-]?secret\b\s*[:=]?\s*([A-Za-z0-9]{30,100})\b`: {"client"},
	} {
		if got := keywords(re); !slices.Equal(got, want) {
			t.Errorf("keywords(%s) = %q, want %q", re, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	for name, want := range map[string][]string{"reStsWindows": {"re", "sts", "windows"}, "clientID": {"client", "id"}, "userPat": {"user", "pat"}, "appConfigRefreshToken": {"app", "config", "refresh", "token"}} {
		if got := words(name); !slices.Equal(got, want) {
			t.Errorf("words(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestLiteralBranches: an alternation at the start of a regex is split into the branches that
// hold a literal of 3 bytes (kept, to be prefiltered) and those that do not (dropped).
func TestLiteralBranches(t *testing.T) {
	kept, dropped, ok := literalBranches(`(?:hv[sb]|[sbr])\.[A-Za-z0-9_-]{24,}`)
	if !ok || len(dropped) != 1 {
		t.Fatalf("literalBranches = %q, %q, %v", kept, dropped, ok)
	}
	re := regexp.MustCompile(kept)
	if !re.MatchString("hvs.CAESIB8KI2QJk0ePUYdOQXaxl0") || !re.MatchString("hvb.AAAAAQJz0zBvWUNOIKTkDhYX") || re.MatchString("s.CAESIB8KI2QJk0ePUYdOQXaxl0") {
		t.Errorf("kept %q matches the wrong tokens", kept)
	}
	if !slices.Equal(keywords(kept), []string{"hvb.", "hvs."}) {
		t.Errorf("keywords(%q) = %q", kept, keywords(kept))
	}
	// not an alternation; every branch with a literal; a capture group (the secret's number)
	for _, re := range []string{`\b[A-Za-z0-9]{32}\b`, `(?:ab|cd)x{3}`, `(x|abcd)[0-9]+`} {
		if _, _, ok := literalBranches(re); ok {
			t.Errorf("literalBranches(%s) split", re)
		}
	}
}

// TestSkipReasonContextCapture: a context regex is skipped unless its name also names a secret
// and it captures a group (appRoleSecretIDContext); a role id's stays skipped.
func TestSkipReasonContextCapture(t *testing.T) {
	const uuid = `([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})`
	for name, want := range map[string]bool{
		"appRoleSecretIDContext": false, // kept
		"appRoleRoleIDContext":   true,
		"keyword":                true,
	} {
		re := `(?i)secret[_-]?id\s*[:\s=]\s*` + uuid
		if name == "keyword" {
			re = `(?i)(discord)`
		}
		if got := skipReason(name, re) != ""; got != want {
			t.Errorf("skipReason(%s) skips: %v, want %v", name, got, want)
		}
	}
	if skipReason("tokenContext", `(?i)token`) == "" {
		t.Error("a context regex with a credential word and no group kept")
	}
}
