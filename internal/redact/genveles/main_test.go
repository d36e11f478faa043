// SPDX-License-Identifier: Apache-2.0

package main

import (
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
