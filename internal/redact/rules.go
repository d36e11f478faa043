// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// rule is one detector. Its regex runs on a window around each trigger: an Aho-Corasick match of
// one of its keywords, or (digits) a cluster of digits found by the byte scanner.
type rule struct {
	name     string
	cat      Category
	re       *regexp.Regexp
	group    int      // submatch whose span is replaced; 0 = whole match
	keywords []string // literal triggers (case-sensitive; list the case variants)
	digits   bool     // triggered by digit clusters instead of keywords
	scanAll  bool     // no trigger: the regex runs on whole values (custom rules without keywords)
	before   int      // window bytes before the trigger
	after    int      // window bytes after the trigger
	// check validates a match; s is the window, m the submatch indices within it. It may return
	// adjusted bounds of the replaced span (relative to s).
	check  func(s string, m []int, start, end int) (int, int, bool)
	action Action
	// kwBoundary: a keyword trigger counts only at the start of a token (not after a letter or digit),
	// or, with kwGlued, where kwGlued(s, start) accepts what the token is glued to.
	kwBoundary bool
	kwGlued    func(s string, at int) bool
	// narrow, if set, replaces the window of a keyword trigger at [a, b) (or rejects the trigger).
	narrow func(s string, a, b int) (int, int, bool)
	// scan, if set, replaces the regex: it checks a keyword trigger at [a, b) of s and returns
	// the span of its finding (generic_credential: a byte scan, no regex).
	scan func(s string, a, b int) (int, int, bool)
	// minDigits gates digit-cluster rules: the cluster must hold at least this many digits.
	minDigits int
	// needDot gates digit-cluster rules: the cluster must contain a '.'.
	needDot bool
	// findAll, if set, is re.FindAllStringSubmatchIndex for this rule's regex, done with less
	// work (findAllEmail); the results are the same.
	findAll func(w string, n int) [][]int
	// lazyCheck: check never moves the start of the span it accepts, so resolve may run it only
	// on matches whose start no finding of an earlier rule covers (see Redactor.resolve); it
	// takes effect for the last rule in priority only. Set for phone_number, whose check parses
	// with phone metadata in up to 33 regions.
	lazyCheck bool
}

func caseVariants(words ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words {
		for _, v := range []string{strings.ToLower(w), strings.ToUpper(w), strings.ToUpper(w[:1]) + strings.ToLower(w[1:]), w} {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// checkFunc validates a match of a rule (rule.check).
type checkFunc = func(s string, m []int, start, end int) (int, int, bool)

// notPlaceholder accepts the replaced span unless it is a placeholder (placeholderIn: a span
// that starts with one of the rule's prefixes kw is judged as its issuer's format).
func notPlaceholder(kw []string) checkFunc {
	return func(s string, _ []int, start, end int) (int, int, bool) {
		return start, end, !placeholderIn(s[start:end], kw)
	}
}

// randomSecret: not a placeholder (placeholderIn with the rule's prefixes kw), and mixed enough
// to be a generated key (3 bits of entropy per byte or more).
func randomSecret(kw []string) checkFunc {
	return func(s string, _ []int, start, end int) (int, int, bool) {
		v := s[start:end]
		if placeholderIn(v, kw) || entropy(v) < 3.0 {
			return 0, 0, false
		}
		return start, end, true
	}
}

func valueCheck(f func(string) bool) func(string, []int, int, int) (int, int, bool) {
	return func(s string, _ []int, start, end int) (int, int, bool) {
		return start, end, f(s[start:end])
	}
}

// Rule names of the built-in detectors, in priority order (an earlier rule wins an overlap).
const (
	RulePEMPrivateKey  = "pem_private_key"
	RuleJWT            = "jwt"
	RuleAnthropic      = "anthropic_api_key"
	RuleOpenAI         = "openai_api_key"
	RuleAWSAccessKeyID = "aws_access_key_id"
	RuleAWSSecretKey   = "aws_secret_access_key"
	RuleAWSSigV4       = "aws_sigv4_credential"
	RuleGoogleAPIKey   = "google_api_key"
	RuleGoogleOAuth    = "google_oauth_token"
	// RuleGoogleOAuthClient is a Google OAuth client id written next to its client secret
	RuleGoogleOAuthClient = "google_oauth_client_id"
	RuleGitHub            = "github_token"
	RuleGitLab            = "gitlab_token"
	RuleSlackToken        = "slack_token"
	RuleSlackWebhook      = "slack_webhook"
	RuleStripe            = "stripe_secret_key"
	RuleHuggingFace       = "huggingface_token"
	RuleNPM               = "npm_token"
	RuleSendGrid          = "sendgrid_api_key"
	RuleGroq              = "groq_api_key"
	RuleXAI               = "xai_api_key"
	RuleReplicate         = "replicate_api_token"
	RuleDatabricks        = "databricks_token"
	RulePyPI              = "pypi_token"
	RulePerplexity        = "perplexity_api_key"
	RuleTavily            = "tavily_api_key"
	RuleLangSmith         = "langsmith_api_key"
	RulePinecone          = "pinecone_api_key"
	RuleNotion            = "notion_token"
	RuleLinear            = "linear_api_key"
	RuleShopify           = "shopify_token"
	RuleDigitalOcean      = "digitalocean_token"
	RuleDockerHub         = "docker_hub_token"
	RuleTelegramBot       = "telegram_bot_token"
	RuleNewRelicUser      = "new_relic_user_api_key"
	RulePEMBase64         = "pem_private_key_base64"
	RuleURLCredentials    = "url_credentials"
	RuleURLToken          = "url_token"
	// RulePasswordHash, RuleGenericCredential (generic.go) and RulePrefixedToken (shape.go) come
	// here in priority
	RuleAuthorization = "authorization"
	RuleCookie        = "cookie"
	RulePasswordKey   = "password_key"
	// RuleNamedValue is a credential given as the value of a name/value pair of attributes
	RuleNamedValue = "named_value"
	RuleIBAN       = "iban"
	RuleEmail      = "email"
	RuleCreditCard = "credit_card"
	RuleUSSSN      = "us_ssn"
	RuleIPv4       = "ipv4_address"
	RuleIPv6       = "ipv6_address"
	RulePhone      = "phone_number"
)

var builtinTemplate = sync.OnceValue(compileBuiltinRules)

// builtinRules returns fresh copies of the built-in rules (regexes are shared).
func builtinRules() []*rule {
	t := builtinTemplate()
	out := make([]*rule, len(t))
	for i, r := range t {
		c := *r
		out[i] = &c
	}
	return out
}

func compileBuiltinRules() []*rule {
	sec := func(name, re string, kw []string, after int, check checkFunc) *rule {
		if check == nil {
			check = notPlaceholder(kw)
		}
		return &rule{name: name, cat: CategorySecret, re: regexp.MustCompile(re), keywords: kw, before: 8, after: after, check: check}
	}
	// secKW: a rule whose check is made from its keywords (randomSecret)
	secKW := func(name, re string, kw []string, after int, mk func([]string) checkFunc) *rule {
		return sec(name, re, kw, after, mk(kw))
	}
	rs := []*rule{
		sec(RulePEMPrivateKey, `-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,\-]*)`,
			[]string{"-----BEGIN"}, 16384, func(_ string, _ []int, a, b int) (int, int, bool) { return a, b, true }),
		sec(RuleJWT, `\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`, []string{"eyJ"}, 8192, nil),
		sec(RuleAnthropic, `\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{20,}`, []string{"sk-ant-"}, 256, nil),
		secKW(RuleOpenAI, `\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}`, []string{"sk-"}, 512, randomSecret),
		sec(RuleAWSSigV4, `Credential=([A-Za-z0-9]{16,128})/`, []string{"Credential="}, 160, nil),
		sec(RuleAWSAccessKeyID, `\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b`,
			[]string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA"}, 32, nil),
		sec(RuleAWSSecretKey, `(?i)(?:aws|amazon)[A-Za-z0-9_.\-]{0,24}(?:secret|sk)[A-Za-z0-9_.\-]{0,24}["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`,
			caseVariants("aws", "amazon"), 128, nil),
		sec(RuleGoogleAPIKey, `\bAIza[0-9A-Za-z_\-]{35}`, []string{"AIza"}, 48, nil),
		sec(RuleGoogleOAuth, `\bya29\.[0-9A-Za-z_\-]{20,}`, []string{"ya29."}, 2048, nil),
		// Veles' gcpoauth2client pairs the id and the secret; the id alone is an identifier
		// (public in browser flows), the pair a client's credentials: the id is taken when a
		// client secret stands within the window (oauthClientPaired)
		{name: RuleGoogleOAuthClient, cat: CategorySecret, re: regexp.MustCompile(`\b[0-9]{10,15}-[A-Za-z0-9]{1,64}\.apps\.googleusercontent\.com\b`),
			keywords: []string{".apps.googleusercontent.com"}, before: oauthClientWindow, after: oauthClientWindow, check: oauthClientPaired},
		sec(RuleGitHub, `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})`,
			[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, 300, nil),
		sec(RuleGitLab, `\bgl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ft|agent|ffct)-[A-Za-z0-9_\-]{20,}`,
			[]string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "gloas-", "glsoat-", "glft-", "glagent-", "glffct-"}, 300, nil),
		sec(RuleSlackToken, `\bxox[abposre]-(?:[0-9]+-)*[A-Za-z0-9\-]{10,}`,
			[]string{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"}, 300, nil),
		sec(RuleSlackWebhook, `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}`, []string{"hooks.slack.com"}, 256, nil),
		sec(RuleStripe, `\b(?:sk|rk)_(?:live|test|prod)_([A-Za-z0-9]{10,247})`, []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"}, 300,
			func(s string, m []int, a, b int) (int, int, bool) {
				// "test" is part of Stripe's test-mode prefix; only the random part must not be a
				// placeholder, judged as the format's (formatPlaceholder): the prefix names it a key
				return m[0], m[1], !formatPlaceholder(s[m[2]:m[3]])
			}),
		secKW(RuleHuggingFace, `\b(?:hf_[A-Za-z0-9]{30,40}|api_org_[A-Za-z0-9]{30,40})\b`, []string{"hf_", "api_org_"}, 64, randomSecret),
		sec(RuleNPM, `\bnpm_[A-Za-z0-9]{36}\b`, []string{"npm_"}, 48, nil),
		sec(RuleSendGrid, `\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b`, []string{"SG."}, 80, nil),
		sec(RuleGroq, `\bgsk_[A-Za-z0-9]{48,52}\b`, []string{"gsk_"}, 64, nil),
		sec(RuleXAI, `\bxai-[A-Za-z0-9]{70,90}\b`, []string{"xai-"}, 100, nil),
		sec(RuleReplicate, `\br8_[A-Za-z0-9]{37}\b`, []string{"r8_"}, 48, nil),
		sec(RuleDatabricks, `\bdapi[a-f0-9]{32}(?:-\d)?\b`, []string{"dapi"}, 48, nil),
		sec(RulePyPI, `\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`, []string{"pypi-AgEIcHlwaS5vcmc"}, 1024, nil),
		secKW(RulePerplexity, `\bpplx-[A-Za-z0-9]{40,64}\b`, []string{"pplx-"}, 80, randomSecret),
		secKW(RuleTavily, `\btvly-(?:dev-|prod-)?[A-Za-z0-9]{20,64}\b`, []string{"tvly-"}, 80, randomSecret),
		sec(RuleLangSmith, `\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b`, []string{"lsv2_"}, 64, nil),
		secKW(RulePinecone, `\bpcsk_[A-Za-z0-9_]{40,100}\b`, []string{"pcsk_"}, 120, randomSecret),
		secKW(RuleNotion, `\b(?:ntn_[A-Za-z0-9]{40,50}|secret_[A-Za-z0-9]{43})\b`, []string{"ntn_", "secret_"}, 64, randomSecret),
		sec(RuleLinear, `\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b`, []string{"lin_api_", "lin_oauth_"}, 64, nil),
		sec(RuleShopify, `\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`, []string{"shpat_", "shpca_", "shppa_", "shpss_"}, 48, nil),
		sec(RuleDigitalOcean, `\bdo[opr]_v1_[a-f0-9]{64}\b`, []string{"dop_v1_", "doo_v1_", "dor_v1_"}, 80, nil),
		secKW(RuleDockerHub, `\bdckr_pat_[A-Za-z0-9_\-]{27,}`, []string{"dckr_pat_"}, 80, randomSecret),
		secKW(RuleTelegramBot, `\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b`, []string{":AA"}, 48, randomSecret),
		secKW(RuleNewRelicUser, `\bNRAK-[A-Z0-9]{27}\b`, []string{"NRAK-"}, 40, randomSecret),
		sec(RulePEMBase64, `LS0tLS1CRUdJT[A-Za-z0-9+/=\s]{40,}`, []string{"LS0tLS1CRUdJT"}, 16384, pemBase64Check),
		// user:password@ in a URL; a multi-host URL (postgres://u:p1@h1,u:p2@h2/db) has one per
		// host; the password may hold '@' (the last '@' before the host ends it)
		sec(RuleURLCredentials, `(?:\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://|,)([^\s:@/?#,"'<>\\]{1,128}:([^\s/?#,"'<>\\]{1,256}))@`, []string{"://"}, 400,
			func(s string, m []int, a, b int) (int, int, bool) {
				if s[m[0]] == ',' && !inURLAuthority(s, m[0]) {
					return 0, 0, false
				}
				// a URL's userinfo is an explicit context: "secret" is the password
				return a, b, !explicitPlaceholder(s[m[4]:m[5]])
			}),
		// a credential as the "port" of a URL's authority, with no '@' after it: the bot URLs
		// of notification services (tgram://<bot id>:<bot token>); a port is digits, this is
		// a credential-shaped value
		sec(RuleURLToken, `\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[A-Za-z0-9_.\-]{1,64}:([A-Za-z0-9_\-]{20,256})(?:[/?#\s"'<>]|$)`, []string{"://"}, 400,
			func(s string, m []int, a, b int) (int, int, bool) {
				return a, b, credentialShaped(s[a:b], "token")
			}),
		sec(RuleAuthorization, `(?i)\b(bearer|basic|ssws)\s+([A-Za-z0-9\-._~+/]{8,}=*)`, caseVariants("bearer", "basic", "ssws"), 4096,
			func(s string, m []int, a, b int) (int, int, bool) {
				scheme, v := strings.ToLower(s[m[2]:m[3]]), s[m[4]:m[5]]
				if isPlaceholder(v) {
					return 0, 0, false
				}
				if scheme == "basic" {
					return m[4], m[5], basicCredential(v)
				}
				return m[4], m[5], len(v) >= 12 && hasDigitOrSymbol(v)
			}),
		sec(RuleCookie, `(?i)\b(?:set-)?cookie["']?\s*[:=]\s*["']?([^\r\n"']+)`, caseVariants("cookie"), 4096,
			func(s string, m []int, a, b int) (int, int, bool) {
				v := s[a:b]
				return a, b, strings.Contains(v, "=") && !isPlaceholder(v)
			}),
		sec(RulePasswordHash, passwordHashRE, passwordHashKeywords, 200, nil),
		sec(RulePasswordKey, `([A-Za-z][A-Za-z0-9_.\-]{0,48})["'\]]?[ \t]*(?:=>|::?=|:|=)[ \t]*(?:"([^"\r\n]{1,256})"|'([^'\r\n]{1,256})'|`+"`"+`([^`+"`"+`\r\n]{1,256})`+"`"+`|([^\s"'`+"`"+`,;&<>()\[\]{}]{1,256}))`,
			passwordKeyKeywords, 300, passwordKeyCheck),
		// <add key="ApiSecret" value="..."/> (.NET appSettings), <param name="password" value="..."/>,
		// <entry key="db.password" value="..."/> (Spring, Log4j): the name is in one attribute,
		// the credential in the next; an explicit context (explicitPlaceholder)
		sec(RuleNamedValue, `(?i)\b(?:key|name)[ \t]*=[ \t]*["']([A-Za-z0-9_.:\-]{1,64})["'][ \t]+value[ \t]*=[ \t]*(?:"([^"\r\n]{1,256})"|'([^'\r\n]{1,256})')`,
			passwordKeyKeywords, 300, namedValueCheck),
		{name: RuleGenericCredential, cat: CategorySecret, keywords: genericKeywords, scan: genericScan},
		{name: RuleBlockValue, cat: CategorySecret, keywords: passwordKeyKeywords, scan: blockValueScan},
		{name: RuleHighEntropyValue, cat: CategorySecret},                                 // found by its byte scanner (scanAssignedEntropy), no regex
		{name: RulePrefixedToken, cat: CategorySecret},                                    // found by the byte scanner (scanPrefixedTokens), no regex
		{name: RuleEncodedCredential, cat: CategorySecret, keywords: encodedJSONKeywords}, // scan set by New (encodedScan)
	}
	for _, r := range rs {
		r.before = max(r.before, 64)
		switch r.name {
		case RuleURLCredentials, RuleURLToken, RulePasswordKey, RulePEMPrivateKey, RuleTelegramBot, RulePEMBase64, RuleGenericCredential, RulePasswordHash,
			RuleGoogleOAuthClient, RuleNamedValue, RuleBlockValue: // keywords inside a word: the id's suffix, reCaptchaSecret
		default:
			r.kwBoundary = true
		}
		switch r.name {
		case RulePasswordKey:
			r.narrow = keyValueWindow
		case RuleNamedValue:
			r.narrow = namedValueWindow
		}
		switch r.name {
		case RuleAWSSecretKey, RuleAWSSigV4, RuleCookie, RuleURLCredentials, RuleURLToken:
			r.group = 1
		}
	}
	// provider rules that gitleaks also has take its allowlists (gcp-api-key lists public
	// browser keys published in documentation and samples)
	for _, r := range rs {
		if id, ok := gitleaksAllowFor[r.name]; ok {
			r.check = withGitleaksAllow(r.check, id)
		}
	}
	// the gitleaks default rule set, after the provider rules above (which name the credential the
	// way agents' users know it) and before the generic key/value rules
	at := slices.IndexFunc(rs, func(r *rule) bool { return r.name == RulePasswordHash })
	rs = slices.Insert(rs, at, slices.Concat(gitleaksDetectors(), velesDetectors())...)
	pii := func(name string, minDigits int, re string, check func(string, []int, int, int) (int, int, bool)) *rule {
		return &rule{name: name, cat: CategoryPII, re: regexp.MustCompile(re), digits: true, before: 20, after: 16, check: check, minDigits: minDigits}
	}
	rs = append(rs,
		pii(RuleIBAN, 6, `\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}`, ibanRefine),
		&rule{name: RuleEmail, cat: CategoryPII, re: regexp.MustCompile(`[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,24}\b`),
			keywords: []string{"@"}, before: 80, after: 260, check: emailCheck},
		pii(RuleCreditCard, 12, `\b(?:\d{4}[ \-]){3}\d{1,7}\b|\b\d{4}[ \-]\d{6}[ \-]\d{4,5}\b|\b\d{4}[ \-]\d{4}[ \-]\d{4}\b|\b\d{12,19}\b`,
			func(s string, _ []int, a, b int) (int, int, bool) {
				// "+4477..." is a phone number in international format
				return a, b, (a == 0 || s[a-1] != '+') && !glued(s, a, b, true) && creditCardValid(s[a:b])
			}),
		pii(RuleUSSSN, 9, `\b\d{3}-\d{2}-\d{4}\b|\b\d{3} \d{2} \d{4}\b`,
			func(s string, _ []int, a, b int) (int, int, bool) {
				return a, b, !glued(s, a, b, true) && ssnValid(s[a:b])
			}),
		pii(RuleIPv4, 4, `\b(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}\b`, ipv4Check),
		&rule{name: RuleIPv6, cat: CategoryPII}, // found by the byte scanner (scanIPv6), no regex
		pii(RulePhone, 7, `(?:\+\d{1,3}[ .\-]?|\b00\d{1,3}[ .\-]?)?(?:\(\d{1,5}\)[ .\-]?)?\d[\d .\-()]{4,22}\d(?:[ ]?(?:x|ext\.?|#)[ ]?\d{1,6})?`, phoneRefine),
	)
	for _, r := range rs {
		switch r.name {
		case RuleIPv4:
			r.needDot = true
		case RulePhone:
			r.lazyCheck = true
		case RuleEmail:
			re := r.re
			r.findAll = func(w string, n int) [][]int { return findAllEmail(re, w, n) }
		}
	}
	return rs
}

// passwordKeyKeywords trigger password_key and named_value: the credential words of a name.
var passwordKeyKeywords = slices.Concat(caseVariants("password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "credential", "private_key", "privatekey", "access_key", "accesskey", "accountkey"),
	[]string{"apiKey", "ApiKey", "APIKey", "secretKey", "SecretKey", "privateKey", "PrivateKey", "accessKey", "AccessKey", "AccountKey",
		"accountKey", "signingKey", "SigningKey", "encryptionKey", "EncryptionKey", "masterKey", "MasterKey", "PassPhrase", "amz-signature", "goog-signature"})

// namedValueCheck accepts the value attribute of a name/value pair whose name is a credential
// name (sensitiveKey, not a bare "token") unless it is an explicit placeholder; only the value
// is replaced. The allowlists of gitleaks' generic-api-key rule (CSRF tokens such as Rails'
// authenticity_token, public keys) apply, as for password_key.
func namedValueCheck(s string, m []int, _, _ int) (int, int, bool) {
	key := s[m[2]:m[3]]
	name, weak, ok := sensitiveKey(key)
	if !ok || weak || name != RulePasswordKey || csrfName(key) {
		return 0, 0, false
	}
	g := 2
	if m[4] < 0 {
		g = 3
	}
	a, b := m[2*g], m[2*g+1]
	if explicitPlaceholder(s[a:b]) || genericAllowed(s[m[0]:m[1]], lineAround(s, m[0], m[1])) {
		return 0, 0, false
	}
	return a, b, true
}

// csrfName reports whether a form field's name is an anti-forgery token's (csrf_token,
// _csrf, Rails' authenticity_token): bound to a page, not a credential, and the hidden field
// forms carry in every recorded page.
func csrfName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "csrf") || strings.Contains(l, "xsrf") || l == "authenticity_token"
}

// oauthClientWindow is how far from a Google OAuth client id its client secret may stand, in
// bytes either side: a client_secret.json (the "installed" or "web" object of Google's download,
// about 400 bytes) or an env file with the two a few lines apart. Veles pairs them up to 10 KiB
// apart (gcpoauth2client maxDistance), in files; in a payload a kilobyte keeps the pair local.
const oauthClientWindow = 1024

// oauthClientSecretRE is a Google OAuth client secret: GOCSPX- and 28 bytes (Veles'
// gcpoauth2client clientSecretRe), or a value given to a client_secret name.
var oauthClientSecretRE = regexp.MustCompile(`\bGOCSPX-[A-Za-z0-9_\-]{28}|(?i)client[_\-]?secret["']?\s*[:=]\s*["']?[A-Za-z0-9_\-]{16,}`)

// oauthClientPaired accepts a Google OAuth client id when a client secret stands in the window s
// (within oauthClientWindow bytes of the id's keyword) and the id's part between the project
// number and the suffix is not a placeholder of the format (formatPlaceholder: the suffix names
// the format).
func oauthClientPaired(s string, m []int, a, b int) (int, int, bool) {
	id := s[m[0]:m[1]]
	if formatPlaceholder(id[strings.IndexByte(id, '-')+1 : strings.IndexByte(id, '.')]) {
		return 0, 0, false
	}
	return a, b, oauthClientSecretRE.MatchString(s)
}

// BuiltinRules lists the names of the built-in rules in priority order.
func BuiltinRules() []string {
	var out []string
	for _, r := range builtinRules() {
		out = append(out, r.name)
	}
	return out
}

func isBooleanOrNull(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "nil", "undefined", "required", "optional", "string":
		return true
	}
	return false
}

func hasDigitOrSymbol(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '+' || c == '/' || c == '~' || c == '=' {
			return true
		}
	}
	return false
}

func emailCheck(s string, _ []int, a, b int) (int, int, bool) {
	v := s[a:b]
	at := strings.IndexByte(v, '@')
	local := v[:at]
	// trim leading dots and the like that RE2 could not exclude without look-behind
	for len(local) > 0 && (local[0] == '.' || local[0] == '-' || local[0] == '+') {
		local = local[1:]
		a++
	}
	if local == "" || strings.HasSuffix(local, ".") {
		return 0, 0, false
	}
	return a, b, true
}

func ipv4Check(s string, _ []int, a, b int) (int, int, bool) {
	// part of a longer dotted sequence (a version number, an OID) or of an identifier: not an address
	if (a > 0 && s[a-1] == '.') || (b+1 < len(s) && s[b] == '.' && s[b+1] >= '0' && s[b+1] <= '9') {
		return 0, 0, false
	}
	if (a >= 2 && (s[a-1] == '-' || s[a-1] == '_') && isAlnum(s[a-2])) || (b+1 < len(s) && (s[b] == '-' || s[b] == '_') && isAlnum(s[b+1])) {
		return 0, 0, false
	}
	return a, b, ipValid(s[a:b])
}

// ibanRefine cuts the candidate to the length registered for its country, then checks mod-97.
func ibanRefine(s string, _ []int, a, b int) (int, int, bool) {
	cc := strings.ToUpper(s[a : a+2])
	want, ok := ibanLengths[cc]
	if !ok {
		return 0, 0, false
	}
	n := 0
	i := a
	for ; i < b && n < want; i++ {
		if s[i] != ' ' {
			n++
		}
	}
	if n != want {
		return 0, 0, false
	}
	if i < len(s) && isAlnum(s[i]) {
		return 0, 0, false
	}
	return a, i, ibanValid(s[a:i])
}

var dateLike = regexp.MustCompile(`^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})$`)

// phoneRefine validates the candidate and, when the whole does not validate, retries without its
// trailing digit groups (a phone number followed by another number).
func phoneRefine(s string, _ []int, a, b int) (int, int, bool) {
	for try := 0; try < 3; try++ {
		v := strings.TrimRight(s[a:b], " .-(")
		b = a + len(v)
		if dateLike.MatchString(v) {
			return 0, 0, false
		}
		if a > 0 && (isAlnum(s[a-1]) || s[a-1] == '.' || s[a-1] == '/' || s[a-1] == ':') {
			return 0, 0, false
		}
		if b < len(s) && (isAlpha(s[b]) && s[b] != 'x' || s[b] == '/' || s[b] == ':') {
			return 0, 0, false
		}
		// cheap shape and context checks first: parsing with phone metadata is the costly part
		if phoneContextOK(s, a, b) && phoneValid(v) {
			return a, b, true
		}
		cut := strings.LastIndexAny(v, " .-")
		if cut <= 0 {
			break
		}
		b = a + cut
	}
	return 0, 0, false
}

// glued reports whether the number s[a:b] is part of a larger token: a decimal fraction
// ("0.7750023603439331"), an identifier ("claude-haiku-4-5-20251001", "x_1234567"), a path or a
// dotted version. With dash, a following "-<digit>" also glues ("1747933766623-0.0.1.1").
func glued(s string, a, b int, dash bool) bool {
	if a >= 2 && isAlnum(s[a-2]) {
		switch s[a-1] {
		case '.', '-', '_', '/', ':', '=', ',':
			return true
		}
	}
	if b+1 < len(s) && isAlnum(s[b+1]) {
		switch s[b] {
		case '.', '_', '/':
			return true
		case '-':
			return dash && s[b+1] >= '0' && s[b+1] <= '9'
		}
	}
	return false
}

func isAlnum(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// basicCredential: base64 that decodes to "user:password".
func basicCredential(v string) bool {
	dec, err := base64Decode(v)
	if err != nil {
		return false
	}
	i := strings.IndexByte(dec, ':')
	return i > 0 && i < len(dec)-1 && !isPlaceholder(dec[i+1:])
}

// sensitiveKeySuffixes: normalised (lower case, without - _ . and spaces) key endings whose
// values are credentials.
var sensitiveKeySuffixes = []string{"password", "passwd", "pwd", "passphrase", "secret", "secretkey", "secretaccesskey",
	"clientsecret", "apikey", "apisecret", "accesstoken", "refreshtoken", "authtoken", "idtoken", "sessiontoken",
	"bearertoken", "token", "privatekey", "accesskey", "credential", "credentials", "signingkey", "encryptionkey", "masterkey",
	"accountkey", "amzsignature", "googsignature"}

// SensitiveKey reports whether values under key (a JSON object key, an attribute key, an HTTP
// header name) are credentials as a whole, and which rule names them: "authorization",
// "cookie" or "password_key".
func SensitiveKey(key string) (string, bool) {
	name, _, ok := sensitiveKey(key)
	return name, ok
}

// sensitiveKey is SensitiveKey that also reports a weak match: a key that is only "token"
// (logprobs and tokenizer output use {"token": "Hello"}), whose value must look random.
func sensitiveKey(key string) (string, bool, bool) {
	if len(key) > 128 {
		return "", false, false
	}
	var buf [128]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			buf[n] = c + 32
			n++
		case c == '-' || c == '_' || c == '.' || c == ' ':
		default:
			buf[n] = c
			n++
		}
	}
	k := string(buf[:n])
	if strings.Contains(k, "public") || strings.Contains(k, "csrf") || strings.Contains(k, "xsrf") || strings.Contains(k, "hash") {
		return "", false, false // public keys, anti-forgery tokens and hashes of secrets are not credentials
	}
	switch {
	case strings.HasSuffix(k, "authorization"):
		return RuleAuthorization, false, true
	case strings.HasSuffix(k, "cookie"), strings.HasSuffix(k, "cookies"):
		return RuleCookie, false, true
	case k == "token":
		return RulePasswordKey, true, true
	}
	for _, suf := range sensitiveKeySuffixes {
		if strings.HasSuffix(k, suf) {
			if suf == "token" && (strings.HasSuffix(k, "maxtoken") || strings.HasSuffix(k, "nexttoken") ||
				strings.HasSuffix(k, "pagetoken") || strings.HasSuffix(k, "stoptoken") || strings.HasSuffix(k, "eostoken") ||
				strings.HasSuffix(k, "bostoken") || strings.HasSuffix(k, "padtoken") || strings.HasSuffix(k, "unktoken")) {
				return "", false, false
			}
			return RulePasswordKey, false, true
		}
	}
	// a credential word inside the name (SUPER_SECRET_VALUES, real_secret_which_isnt_an_id), as
	// detect-secrets' keyword detector reads names, unless the name ends in a word that makes it
	// about the credential rather than the credential itself; the value must then look random
	for _, w := range []string{"secret", "password", "passwd", "apikey", "privatekey", "accesstoken", "authtoken"} {
		if strings.Contains(k, w) {
			if aboutCredential(key) != "" {
				return "", false, false
			}
			return RulePasswordKey, true, true
		}
	}
	return "", false, false
}

// aboutCredential returns the word of nonCredentialSuffixes that key ends in ("" if none): the
// name is about a credential, not the credential (secret_name, passwordLength, TOKEN_URL,
// apikeyid, expires_at). The suffix must be written as one run of key's letters (apikeyid,
// api_key_id) or as its last words (expires_at, expiresAt): real_secret_which_isnt_an_i_d,
// detect-secrets' own example of a credential whose name only spells "id" (its keyword
// detector's tests), does not end in "id".
func aboutCredential(key string) string {
	// the letters and digits of key, lower-cased, from the end, with where each word starts
	end := len(key)
	for end > 0 && !isAlnum(key[end-1]) {
		end--
	}
	for _, suf := range nonCredentialSuffixes {
		if end < len(suf) {
			continue
		}
		// one run: the last len(suf) bytes of key, case aside
		if strings.EqualFold(key[end-len(suf):end], suf) {
			return suf
		}
		// the last words: letters read back from the end across separators and camelCase
		// boundaries, each word at least two letters, all of suf consumed at a word start
		i, n, word := end, len(suf), 0
		for i > 0 && n > 0 {
			c := key[i-1]
			if c == '_' || c == '-' || c == '.' || c == ' ' {
				if word < 2 {
					break
				}
				word = 0
				i--
				continue
			}
			if c|0x20 != suf[n-1] {
				break
			}
			i--
			n--
			word++
			if n > 0 && c >= 'A' && c <= 'Z' && i > 0 && key[i-1] >= 'a' && key[i-1] <= 'z' {
				if word < 2 {
					break
				}
				word = 0 // a camelCase word starts here: expiresAt
			}
		}
		if n == 0 && word >= 2 && (i == 0 || !isAlnum(key[i-1]) || key[i] >= 'A' && key[i] <= 'Z' && key[i-1] >= 'a' && key[i-1] <= 'z') {
			return suf
		}
	}
	return ""
}

// nonCredentialSuffixes end names that are about a credential, not the credential (secret_name,
// password_length, token_url, api_key_id): aboutCredential.
var nonCredentialSuffixes = []string{"id", "ids", "name", "names", "length", "len", "size", "type", "path", "file", "url", "uri",
	"version", "count", "field", "label", "hint", "prompt", "policy", "manager", "store", "ref", "arn", "enabled", "required",
	"expiry", "expires", "expiresat", "expiresin", "at", "time", "ttl", "provider", "endpoint", "header", "format", "mode",
	"prefix", "suffix", "algorithm", "algo", "scope", "scopes", "issuer", "audience", "region", "location", "directory", "dir",
	"host", "port"}

// phoneGroups returns the lengths of the digit groups of v before any extension.
func phoneGroups(v string) []int {
	var g []int
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == 'x' || c == '#' || c == 'e' {
			break
		}
		if c >= '0' && c <= '9' {
			n++
			continue
		}
		if n > 0 {
			g = append(g, n)
		}
		n = 0
	}
	if n > 0 {
		g = append(g, n)
	}
	return g
}

var streetWords = map[string]bool{"street": true, "st": true, "avenue": true, "ave": true, "road": true, "rd": true,
	"lane": true, "ln": true, "drive": true, "dr": true, "court": true, "ct": true, "close": true, "place": true,
	"way": true, "boulevard": true, "blvd": true, "rue": true, "suite": true, "apt": true, "highway": true, "square": true}

var phoneNegativeContext = []string{"suite ", "apt ", "apt. ", "apartment ", "unit ", "floor ", "license number", "licence number", "license no", "licence no", "license #",
	"passport number", "passport no", "zip", "postal code", "postcode",
	"account number", "order number", "invoice number", "serial number", "tracking number"}

// phoneContextOK rejects digit groups that read as something else: a street number followed by a
// street name or after "Suite"/"Apt", a postal code shape, a bare run of digits that is not a full national number, or
// a national number introduced as a licence, passport, postal code, account or order number.
func phoneContextOK(s string, a, b int) bool {
	v := s[a:b]
	intl := strings.HasPrefix(v, "+") || strings.HasPrefix(v, "00") || strings.Contains(v, "(")
	if glued(s, a, b, true) {
		return false
	}
	g := phoneGroups(v)
	if strings.Count(v, "(") != strings.Count(v, ")") || lowVariety(v) {
		return false
	}
	if !intl {
		switch {
		case strings.Contains(v, ".") && strings.Contains(v, "-"):
			return false // a date range, 17.02.26-23.02.26
		case len(g) == 2 && g[0] == 4 && g[1] == 4 && (v[0] == '1' || v[0] == '2') && v[4] == '-' && v[:4] < v[5:9]:
			return false // a year range, 1950-2026
		case len(g) >= 3 && g[0] == 1:
			return false // thousands grouping, 8 967 665
		case len(g) == 3 && g[0] == 3 && g[1] == 2 && g[2] == 4:
			return false // the shape of a US SSN
		case len(g) == 1 && g[0] != 10 && g[0] != 11:
			return false
		case len(g) == 1 && v[0] == '1':
			return false // a Unix time in seconds (1000000000 to 1999999999), not a national number
		case len(g) == 2 && g[0] == 2 && g[1] == 6:
			// a short national format ("99 668472"): must be a valid number somewhere, not only possible
			return v[0] >= '2' && ascendingRun(v) < 5 && phoneValidStrict(v)
		case len(g) == 2 && (g[0] < 3 || g[0] > 4 || g[1] < 4):
			return false
		}
	}
	// the words after the number
	rest := s[b:min(len(s), b+40)]
	words := strings.Fields(rest)
	if len(rest) > 0 && rest[0] == ' ' && len(words) > 0 {
		for _, w := range words[:min(2, len(words))] {
			if streetWords[strings.ToLower(strings.Trim(w, ".,;:!?"))] {
				return false
			}
		}
	}
	if intl {
		return true
	}
	before := strings.ToLower(s[max(0, a-24):a])
	for _, k := range phoneNegativeContext {
		if strings.Contains(before, k) {
			return false
		}
	}
	return true
}

func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// keyValueWindow narrows a password-like keyword trigger to "key <sep> value": the key token
// around the keyword, then optional quote and blanks, then ':' or '='; otherwise no window.
func keyValueWindow(s string, a, b int) (int, int, bool) {
	lo := a
	for lo > 0 && isKeyByte(s[lo-1]) && a-lo < 48 {
		lo--
	}
	hi := b
	for hi < len(s) && isKeyByte(s[hi]) && hi-b < 48 {
		hi++
	}
	j, ok := keySeparator(s, hi)
	if !ok {
		return 0, 0, false
	}
	return lo, min(len(s), j+1+300), true
}

// keySeparator returns where the ':' or '=' after a key ending at hi stands (an optional closing
// quote and blanks between), and false when something else follows the key.
func keySeparator(s string, hi int) (int, bool) {
	j := hi
	if j < len(s) && (s[j] == '"' || s[j] == '\'') {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j, j < len(s) && (s[j] == ':' || s[j] == '=')
}

// lineStart returns the start of the indentation before i when only blanks stand between the
// start of i's line and i (false otherwise): a key that starts its line.
func lineStart(s string, i int) (int, bool) {
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return i, i == 0 || s[i-1] == '\n'
}

// namedValueWindow narrows a credential-word trigger to a name/value pair of attributes
// (named_value): the name token around the keyword is a quoted attribute value after key= or
// name=, and "value" follows its closing quote; otherwise no window. The regex then runs on
// [key=, closing quote + 300).
func namedValueWindow(s string, a, b int) (int, int, bool) {
	lo := a
	for lo > 0 && (isKeyByte(s[lo-1]) || s[lo-1] == ':') && a-lo < 64 {
		lo--
	}
	if lo == 0 || (s[lo-1] != '"' && s[lo-1] != '\'') {
		return 0, 0, false
	}
	q := s[lo-1]
	i := lo - 1
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	if i == 0 || s[i-1] != '=' {
		return 0, 0, false
	}
	i--
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	var start int
	switch {
	case i >= 3 && strings.EqualFold(s[i-3:i], "key"):
		start = i - 3
	case i >= 4 && strings.EqualFold(s[i-4:i], "name"):
		start = i - 4
	default:
		return 0, 0, false
	}
	hi := b
	for hi < len(s) && (isKeyByte(s[hi]) || s[hi] == ':') && hi-b < 64 {
		hi++
	}
	if hi >= len(s) || s[hi] != q {
		return 0, 0, false
	}
	j := hi + 1
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j+5 > len(s) || !strings.EqualFold(s[j:j+5], "value") {
		return 0, 0, false
	}
	return start, min(len(s), j+5+300), true
}

// lowVariety: one digit makes up more than 60% of the digits (9999999893, 1000000000).
func lowVariety(v string) bool {
	var c [10]int
	n, top := 0, 0
	for i := 0; i < len(v); i++ {
		if v[i] >= '0' && v[i] <= '9' {
			d := v[i] - '0'
			c[d]++
			n++
			top = max(top, c[d])
		}
	}
	return n > 0 && top*10 > n*6
}

// looksRandom: at least 16 bytes without blanks, with the entropy of a generated value, and
// digits or mixed case (lower-case words joined by punctuation, like detect_secrets.main:run,
// are names, not keys).
func looksRandom(v string) bool {
	if len(v) < 16 || strings.ContainsAny(v, " \t\n") || entropy(v) < 3.0 {
		return false
	}
	lower, upper, digit := charClasses(v)
	return digit || (upper && lower)
}

// passwordKeyCheck accepts "key <op> value" when the key names a credential (sensitiveKey) and
// the value looks like one (secretValue); for an unquoted value the expression must end with it
// (not "password = +new Buffer(x)"). Only the value is replaced, never its quotes. The
// allowlists of gitleaks' generic-api-key rule that test the match or the line apply too.
func passwordKeyCheck(s string, m []int, _, _ int) (int, int, bool) {
	name, weak, ok := sensitiveKey(s[m[2]:m[3]])
	if !ok || name != RulePasswordKey {
		return 0, 0, false
	}
	g := 0
	for k := 2; k <= 5; k++ {
		if m[2*k] >= 0 {
			g = k
			break
		}
	}
	if g == 0 {
		return 0, 0, false
	}
	va, vb := m[2*g], m[2*g+1]
	v := s[va:vb]
	quoted := g < 5
	if !quoted && va == m[3]+1 && isToken(s[m[2]:vb]) {
		return 0, 0, false // a hash token made by this package, "github_token:f2b281871f07"
	}
	// an explicit context (KEY=VALUE, a YAML line, a quoted value) makes the value the secret
	// whatever it looks like: only placeholders pass
	explicit := !weak && (quoted || configAssignment(s, m[2], m[3], va, vb))
	if !secretValue(v, quoted, weak, explicit) || (!quoted && exprContinues(s, vb)) {
		return 0, 0, false
	}
	if genericAllowed(s[m[0]:m[1]], lineAround(s, m[0], m[1])) {
		return 0, 0, false
	}
	return va, vb, true
}

// secretValue reports whether v, assigned to a credential-like name, looks like a credential
// rather than code or prose: at least 4 bytes without blanks, not a placeholder (isPlaceholder),
// not a literal of a type (true, null, string), not a reference or expression ($VAR, this.x,
// process.env.X, f(x), a[0], {...}), not a path, URL, ARN, CSS selector or namespace. Unquoted
// values made only of letters and underscores are identifiers unless they look random or the
// context is explicit (configAssignment: PASSWORD=whiteduke). explicit replaces the placeholder
// heuristics by explicitPlaceholder. weak (the key is only "token") asks for a random-looking
// value.
func secretValue(v string, quoted, weak, explicit bool) bool {
	if len(v) < 4 || strings.ContainsAny(v, " \t\r\n") || isBooleanOrNull(v) {
		return false
	}
	if explicit && explicitPlaceholder(v) || !explicit && isPlaceholder(v) {
		return false
	}
	if weak && !looksRandom(v) {
		return false
	}
	switch v[0] {
	case '!', '$', '%', '#', '&', '*', '+', '@', '.', '/', '~', '\\', '=', '?', ':', '-', '>':
		return false
	}
	l := strings.ToLower(v)
	if strings.HasPrefix(l, "arn:") || strings.Contains(v, "://") || strings.Contains(v, "::") || strings.ContainsAny(v, "()[]{}") {
		return false
	}
	if isDottedRef(v) && !randomPart(v) && (!quoted || !hasLetterAndDigit(v)) {
		return false // process.env.X, var.db_password, config.password, io.jsonwebtoken
	}
	if !explicit && !quoted && isIdent(v) && !hasLetterAndDigit(v) && !looksRandom(v) {
		return false // password = password, PASSWORD=SomeIdentifier
	}
	return true
}

// isDottedRef: identifiers joined by dots, like process.env.API_KEY.
func isDottedRef(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || !(isAlpha(p[0]) || p[0] == '_' || p[0] == '$') || !isIdent(strings.TrimPrefix(p, "$")) {
			return false
		}
	}
	return true
}

// exprContinues reports whether code goes on after an unquoted value ending at i on its line
// ("password = +new Buffer(x)", "key = a + b"), rather than ending or giving way to a comment
// or a separator.
func exprContinues(s string, i int) bool {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) {
		return false
	}
	c := s[i]
	if isAlnum(c) || c == '_' {
		// another "key=value" on the same line ends this one
		j := i
		for j < len(s) && isKeyByte(s[j]) {
			j++
		}
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		return !(j < len(s) && (s[j] == '=' || s[j] == ':') && !(j+1 < len(s) && s[j+1] == '='))
	}
	return c == '(' || c == '.' || c == '+' || c == '*' || c == '?' || c == '|' || c == '['
}

// genericAllowed applies the allowlists of gitleaks' generic-api-key rule that test the whole
// match (keys such as public_key, csrf_token, access_id, api_version) or the line.
func genericAllowed(match, line string) bool {
	for i := range gitleaksData().GenericAllow {
		a := &gitleaksData().GenericAllow[i]
		if a.Target == "" {
			continue // the secret-target list (letters-only values) would pass human passwords
		}
		if a.allowed("", match, line) {
			return true
		}
	}
	return false
}

// inURLAuthority reports whether the ',' at i separates hosts of a URL's authority: "://" comes
// before it with no blank, quote or '/' in between.
func inURLAuthority(s string, i int) bool {
	for j := i - 1; j >= 2 && i-j < 1024; j-- {
		switch s[j] {
		case '/':
			return s[j-1] == '/' && s[j-2] == ':'
		case ' ', '\t', '\n', '\r', '"', '\'', '<', '>':
			return false
		}
	}
	return false
}

// pemBase64Check accepts base64 text that decodes to a PEM private key ("LS0tLS1CRUdJT" is
// "-----BEGIN" in base64), as Kubernetes secrets and CI variables hold them; the span ends at the
// last base64 byte (not at the blanks after it).
func pemBase64Check(s string, _ []int, a, b int) (int, int, bool) {
	// wrapped base64: lines as long as the first, the last one shorter or padded; a line that
	// the text goes on after ("tls.crt: ...") is not part of it
	end, first := a, -1
	for i := a; i < b; {
		j := i
		for j < b && s[j] != ' ' && s[j] != '\n' && s[j] != '\r' && s[j] != '\t' {
			j++
		}
		if j == i {
			i++
			continue
		}
		if j == b && b < len(s) && isTokenByte(s[b]) {
			break // the text goes on: not base64
		}
		end = j
		if first < 0 {
			first = j - i
		}
		if j-i != first || s[j-1] == '=' {
			break
		}
		i = j
	}
	b = end
	var clean []byte
	for i := a; i < b && len(clean) < 512; i++ {
		if c := s[i]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			clean = append(clean, c)
		}
	}
	clean = clean[:len(clean)/4*4]
	dec := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, _ := base64.StdEncoding.Decode(dec, clean)
	d := string(dec[:n])
	return a, b, strings.HasPrefix(d, "-----BEGIN") && strings.Contains(d, "PRIVATE KEY")
}

// gitleaksAllowFor maps provider rules here to the gitleaks rule whose allowlists they apply.
var gitleaksAllowFor = map[string]string{RuleGoogleAPIKey: "gcp-api-key", "veles.gcpapikey.key": "gcp-api-key"}

// withGitleaksAllow wraps check so that a finding the allowlists of gitleaks rule id accept is
// dropped.
func withGitleaksAllow(check func(string, []int, int, int) (int, int, bool), id string) func(string, []int, int, int) (int, int, bool) {
	var allow []glAllow
	for _, g := range gitleaksData().Rules {
		if g.ID == id {
			allow = g.Allow
		}
	}
	if len(allow) == 0 {
		return check
	}
	return func(s string, m []int, a, b int) (int, int, bool) {
		a, b, ok := check(s, m, a, b)
		if !ok {
			return a, b, false
		}
		line := lineAround(s, m[0], m[1])
		for i := range allow {
			if allow[i].allowed(s[a:b], s[m[0]:m[1]], line) {
				return 0, 0, false
			}
		}
		return a, b, true
	}
}

// emailLocalMax is the longest local part the email regex takes ([A-Za-z0-9._%+\-]{1,64}).
const emailLocalMax = 64

func isEmailLocal(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// findAllEmail is re.FindAllStringSubmatchIndex(w, n) for the email rule's regex, which has no
// group and no assertion before its end: its matches are a run of 1 to 64 local-part bytes (no
// '@' among them), an '@', and a domain. A match starting at i therefore takes the first '@' at
// or after i and only local-part bytes before it, so no match starts before the start of the
// run of local-part bytes (at most 64) that ends at the next '@'. Each search starts there,
// on w cut at that point (the regex sees no byte before its match, and the same end of text);
// the regex then checks the candidates from there on as FindAll would. Without an '@' left,
// nothing is searched: the window of a trigger is 80 bytes before it and 260 after, and the
// backtracking search of its counted repetitions cost tens of microseconds per window.
func findAllEmail(re *regexp.Regexp, w string, n int) [][]int {
	var out [][]int
	for pos := 0; pos < len(w) && (n < 0 || len(out) < n); {
		at := strings.IndexByte(w[pos:], '@')
		if at < 0 {
			break
		}
		at += pos
		lo := at
		for lo > pos && at-lo < emailLocalMax && isEmailLocal(w[lo-1]) {
			lo--
		}
		m := re.FindStringSubmatchIndex(w[lo:])
		if m == nil {
			break
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += lo
			}
		}
		out = append(out, m)
		if m[1] == m[0] { // cannot happen (the match holds an '@'); as FindAll, step past it
			pos = m[1] + 1
		} else {
			pos = m[1]
		}
	}
	return out
}
