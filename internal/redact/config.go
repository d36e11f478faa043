// SPDX-License-Identifier: Apache-2.0

// Package redact finds personal data (PII) and credentials in strings and JSON documents and
// replaces them in place. It is the detection core of the agent_redaction processor and of the
// record/replay proxy, which normalises live requests the same way before matching them against
// recorded ones.
//
// A Redactor is built once from a Config (New) and is safe for concurrent use. Detection is
// two-stage: a literal prefilter (an Aho-Corasick automaton over rule keywords, plus a byte scanner
// for digit clusters) finds candidate positions, and each rule's regular expression runs only on a
// small window around a candidate. Findings are validated (Luhn, IBAN mod-97, phone-number metadata,
// IP parsing, placeholder and entropy checks) before they count.
//
// Secret rules: runagain's provider rules, then the gitleaks default rule set (generated from
// gitleaks' config by ./gen into gitleaks_rules.json, MIT licence in GITLEAKS_LICENSE; regex,
// secret group, entropy threshold, keywords and allowlists as gitleaks applies them), then the
// generic ones: URL credentials, Authorization and Cookie values, and values assigned to
// credential-like names that look like credentials (passwordKeyCheck, the detect-secrets keyword
// approach). Placeholders are recognised by shape (isPlaceholder).
//
// Replacements: mask gives "[REDACTED:<rule>]", hash gives "<rule>:<first 12 hex digits of
// HMAC-SHA256(key, value)>", drop tells the caller to remove the whole value (the string itself is
// masked so a caller that ignores the flag still leaks nothing).
package redact

import (
	"errors"
	"fmt"
	"regexp"
)

// Action is what happens to a finding.
type Action string

const (
	// ActionMask replaces the value with "[REDACTED:<rule>]".
	ActionMask Action = "mask"
	// ActionHash replaces the value with "<rule>:<12 hex of HMAC-SHA256>".
	ActionHash Action = "hash"
	// ActionDrop asks the caller to remove the attribute holding the value.
	ActionDrop Action = "drop"
)

// Category groups rules for default actions.
type Category string

const (
	// CategoryPII is personal data: default action hash.
	CategoryPII Category = "pii"
	// CategorySecret is a credential: default action mask.
	CategorySecret Category = "secret"
)

// Validator names usable by custom rules.
const (
	ValidatorNone   = ""
	ValidatorLuhn   = "luhn"   // digits of the match pass the Luhn check
	ValidatorMod97  = "mod97"  // the match is an IBAN with a valid ISO 7064 mod-97 check
	ValidatorPhone  = "phone"  // the match is a possible phone number (libphonenumber metadata)
	ValidatorIP     = "ip"     // the match parses as an IPv4 or IPv6 address
	ValidatorSecret = "secret" // the match is not a placeholder and looks random enough
)

// CustomRule is a rule defined in configuration.
type CustomRule struct {
	// Name identifies the rule in tokens and counters: [a z0-9_.-], 1 to 64 characters.
	Name string `mapstructure:"name"`
	// Regex is an RE2 expression. If it has a capture group named "value", only that group is
	// replaced; otherwise the whole match is.
	Regex string `mapstructure:"regex"`
	// Validator is one of "", "luhn", "mod97", "phone", "ip", "secret".
	Validator string `mapstructure:"validator"`
	// Keywords are literals of which at least one occurs in or just before every match; when
	// given, the regex runs only near them. Without keywords the regex scans whole values.
	Keywords []string `mapstructure:"keywords"`
	// Category is "pii" or "secret" (default "secret"); it picks the default action.
	Category Category `mapstructure:"category"`
	// Action overrides the category default: mask, hash or drop.
	Action Action `mapstructure:"action"`
}

// Config configures a Redactor.
type Config struct {
	// HashKey is the HMAC-SHA256 key for ActionHash. Empty means a random key per Redactor
	// (tokens are then stable only within one process).
	HashKey []byte
	// PIIAction is the default action of PII rules (default hash).
	PIIAction Action
	// SecretAction is the default action of secret rules (default mask).
	SecretAction Action
	// RuleActions overrides the action of single rules by name (built-in or custom).
	RuleActions map[string]Action
	// Disabled lists built-in rule names to turn off.
	Disabled []string
	// Custom adds rules.
	Custom []CustomRule
	// CleanCache, when not nil, remembers strings found to hold nothing to redact (whole values
	// and JSON string leaves of at least MinCleanCacheLen bytes), so that they are not scanned
	// again; see CleanCache. It may be shared by Redactors of different configurations.
	CleanCache *CleanCache
}

var ruleNameRE = regexp.MustCompile(`^[a-z0-9_.\-]{1,64}$`)

// ValidateAction reports an error when a is not one of mask, hash, drop.
func ValidateAction(a Action) error {
	switch a {
	case ActionMask, ActionHash, ActionDrop:
		return nil
	}
	return fmt.Errorf("unknown action %q (want mask, hash or drop)", a)
}

// Validate checks the configuration without compiling it. Errors name the field.
func (c *Config) Validate() error {
	var errs []error
	if c.PIIAction != "" {
		if err := ValidateAction(c.PIIAction); err != nil {
			errs = append(errs, fmt.Errorf("pii_action: %w", err))
		}
	}
	if c.SecretAction != "" {
		if err := ValidateAction(c.SecretAction); err != nil {
			errs = append(errs, fmt.Errorf("secret_action: %w", err))
		}
	}
	known := map[string]bool{}
	for _, n := range BuiltinRules() {
		known[n] = true
	}
	for _, n := range c.Disabled {
		if !known[n] {
			errs = append(errs, fmt.Errorf("disabled_rules: unknown built-in rule %q", n))
		}
	}
	for i, cr := range c.Custom {
		p := fmt.Sprintf("custom_rules[%d]", i)
		if !ruleNameRE.MatchString(cr.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q must match %s", p, cr.Name, ruleNameRE))
		} else if known[cr.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is already a rule name", p, cr.Name))
		}
		known[cr.Name] = true
		if cr.Regex == "" {
			errs = append(errs, fmt.Errorf("%s.regex: must not be empty", p))
		} else if re, err := regexp.Compile(cr.Regex); err != nil {
			errs = append(errs, fmt.Errorf("%s.regex: %w", p, err))
		} else if re.MatchString("") {
			errs = append(errs, fmt.Errorf("%s.regex: must not match the empty string", p))
		}
		if _, ok := validators[cr.Validator]; !ok {
			errs = append(errs, fmt.Errorf("%s.validator: unknown validator %q", p, cr.Validator))
		}
		for j, k := range cr.Keywords {
			if k == "" {
				errs = append(errs, fmt.Errorf("%s.keywords[%d]: must not be empty", p, j))
			}
		}
		switch cr.Category {
		case "", CategoryPII, CategorySecret:
		default:
			errs = append(errs, fmt.Errorf("%s.category: unknown category %q (want pii or secret)", p, cr.Category))
		}
		if cr.Action != "" {
			if err := ValidateAction(cr.Action); err != nil {
				errs = append(errs, fmt.Errorf("%s.action: %w", p, err))
			}
		}
	}
	for name, a := range c.RuleActions {
		if !known[name] {
			errs = append(errs, fmt.Errorf("rule_actions: unknown rule %q", name))
		}
		if err := ValidateAction(a); err != nil {
			errs = append(errs, fmt.Errorf("rule_actions[%s]: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
