// SPDX-License-Identifier: Apache-2.0

// Command genveles writes runagain's second embedded rule set from the secret detectors of
// OSV-SCALIBR's Veles (github.com/google/osv-scalibr, veles/secrets/*, Apache-2.0, maintained by
// Google's open-source security team).
//
// Veles detectors are Go code: each family's package compiles its token shapes with
// regexp.MustCompile on package-level string literals. This command reads those files from the
// module (go mod download, the module cache) with go/parser, and keeps every detection regex:
// not the validation ones (anchored ^...$), not the context ones that only say a credential may
// be near (names with context, keyword, user, url, filter, ...). Each rule gets the literals any
// match must contain as its keywords (derived with regexp/syntax), so that it runs only near one
// of them, as the gitleaks rules do; a regex without such a literal of 3 bytes or more cannot be
// prefiltered and is listed as skipped (the generic detector covers those values in key/value
// contexts). The secret is the first capture group when the regex has one, else the match. It
// copies the module's LICENSE next to the output.
//
// Usage (go generate in internal/redact): go run ./genveles -out veles_rules.json -license VELES_LICENSE
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
)

// Module is the Veles release the rules are generated from.
const Module = "github.com/google/osv-scalibr@v0.5.3"

// Rule is one generated rule (the shape of gitleaks_rules.json's rules).
type Rule struct {
	ID          string   `json:"id"`
	Regex       string   `json:"regex"`
	SecretGroup int      `json:"secret_group,omitempty"`
	Keywords    []string `json:"keywords"`
}

// Out is the generated file.
type Out struct {
	Source  string   `json:"source"`
	Licence string   `json:"licence"`
	Skipped []string `json:"skipped"`
	Rules   []Rule   `json:"rules"`
}

// contextWords, as words of a regex's variable name, mark regexes that find what is near a
// credential, or validate one, not the credential itself; idWords do so as its last word
// (clientID, projectRef, username).
var (
	contextWords = map[string]bool{"context": true, "keyword": true, "url": true, "instance": true, "filter": true, "login": true,
		"sts": true, "issuer": true, "email": true}
	idWords = map[string]bool{"id": true, "ref": true, "user": true, "username": true, "name": true}
)

// codeChecked are Veles detectors whose regex alone is far broader than the credential: Veles
// validates the match in code (supabase.jwt reads the JWT's claims; http reads the header
// structure, which runagain's authorization rule does too).
var codeChecked = map[string]bool{"veles.supabase.jwt": true, "veles.http.basicAuth": true, "veles.http.bearer": true}

func main() {
	out := flag.String("out", "veles_rules.json", "output JSON")
	lic := flag.String("license", "VELES_LICENSE", "where to copy the upstream licence")
	dir := flag.String("module-dir", "", "the module's directory (default: go mod download "+Module+")")
	flag.Parse()
	if *dir == "" {
		d, err := moduleDir(Module)
		if err != nil {
			log.Fatal(err)
		}
		*dir = d
	}
	root := filepath.Join(*dir, "veles", "secrets")
	fams, err := os.ReadDir(root)
	if err != nil {
		log.Fatal(err)
	}
	o := Out{Source: "google/osv-scalibr veles/secrets (" + Module + ")", Licence: "Apache-2.0, Copyright Google LLC; see VELES_LICENSE"}
	for _, fam := range fams {
		if !fam.IsDir() || fam.Name() == "common" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, fam.Name(), "*.go"))
		sort.Strings(files)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			rules, skipped := fileRules(f, fam.Name())
			o.Rules = append(o.Rules, rules...)
			o.Skipped = append(o.Skipped, skipped...)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(o); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	l, err := os.ReadFile(filepath.Join(*dir, "LICENSE"))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*lic, l, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d rules written to %s (%d skipped)\n", len(o.Rules), *out, len(o.Skipped))
}

// fileRules returns the detection regexes of one Go file of family fam.
func fileRules(path, fam string) (rules []Rule, skipped []string) {
	af, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		log.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range af.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range gd.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok || len(vs.Names) != len(vs.Values) {
				continue
			}
			for i, n := range vs.Names {
				if s, ok := strExpr(vs.Values[i], consts); ok {
					consts[n.Name] = s
				}
			}
		}
	}
	for _, d := range af.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range gd.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok || len(vs.Names) != len(vs.Values) {
				continue
			}
			for i, n := range vs.Names {
				call, ok := vs.Values[i].(*ast.CallExpr)
				if !ok || !isMustCompile(call) || len(call.Args) != 1 {
					continue
				}
				re, ok := strExpr(call.Args[0], consts)
				if !ok {
					continue
				}
				short := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n.Name, "Re"), "Regex"), "Pattern")
				id := "veles." + fam + "." + short
				if codeChecked[id] {
					skipped = append(skipped, id+" (validated in Veles' code, the regex alone matches far more)")
					continue
				}
				if why := skipReason(short, re); why != "" {
					skipped = append(skipped, id+" ("+why+")")
					continue
				}
				kws := keywords(re)
				if len(kws) == 0 {
					if kept, dropped, ok := literalBranches(re); ok {
						// the branches with a literal become the rule; the others stay skipped
						skipped = append(skipped, id+" (branches "+strings.Join(dropped, ", ")+": no literal of 3 bytes or more, cannot be prefiltered)")
						re, kws = kept, keywords(kept)
					} else {
						skipped = append(skipped, id+" (no literal of 3 bytes or more that every match holds: cannot be prefiltered)")
						continue
					}
				}
				r := Rule{ID: id, Regex: re, Keywords: kws}
				if cre := regexp.MustCompile(re); cre.NumSubexp() > 0 {
					r.SecretGroup = 1
				}
				rules = append(rules, r)
			}
		}
	}
	return rules, skipped
}

func skipReason(name, re string) string {
	if strings.HasPrefix(re, "^") {
		return "anchored: validates a value, does not find one"
	}
	ws := words(name)
	for _, w := range ws {
		if contextWords[w] && !capturesSecret(ws, re) {
			return "context, not a credential"
		}
	}
	if len(ws) > 0 && idWords[ws[len(ws)-1]] {
		return "an identifier, not a credential"
	}
	if _, err := regexp.Compile(re); err != nil {
		return "does not compile: " + err.Error()
	}
	return ""
}

// words splits a camelCase or snake_case Go name into lower-case words (reStsWindows -> re sts
// windows, clientID -> client id).
func words(name string) []string {
	var out []string
	cur := ""
	rs := []rune(name)
	for i, r := range rs {
		upper := r >= 'A' && r <= 'Z'
		if r == '_' || (upper && cur != "" && (i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z' || rs[i-1] >= 'a' && rs[i-1] <= 'z')) {
			if cur != "" {
				out = append(out, strings.ToLower(cur))
			}
			cur = ""
			if r == '_' {
				continue
			}
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, strings.ToLower(cur))
	}
	return out
}

// capturesSecret: a context regex whose name also names a secret (appRoleSecretIDContext:
// "secret_id: <uuid>") and which captures a group finds the secret in its context, as the
// key/value rules of gitleaks do; its group is the credential, not the context.
func capturesSecret(ws []string, re string) bool {
	named := false
	for _, w := range ws {
		switch w {
		case "secret", "password", "token", "key", "pat", "credential", "credentials":
			named = true
		}
	}
	if !named {
		return false
	}
	cre, err := regexp.Compile(re)
	return err == nil && cre.NumSubexp() > 0
}

func isMustCompile(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	p, ok := sel.X.(*ast.Ident)
	return ok && p.Name == "regexp" && sel.Sel.Name == "MustCompile"
}

// strExpr evaluates string literals, constants and their concatenation.
func strExpr(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[x.Name]
		return s, ok
	case *ast.ParenExpr:
		return strExpr(x.X, consts)
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, ok1 := strExpr(x.X, consts)
			b, ok2 := strExpr(x.Y, consts)
			return a + b, ok1 && ok2
		}
	}
	return "", false
}

// keywords returns lower-cased literals one of which every match of re contains, each of at
// least 3 bytes, or nil when there are none.
func keywords(re string) []string {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil
	}
	set := required(p.Simplify())
	if len(set) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range set {
		// no quote, backslash or control byte: keywords are looked for in raw JSON bytes too
		// (redact's prefilter), where those are escaped; the longest piece without one stands in
		best := ""
		for _, p := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 }) {
			if len(p) > len(best) {
				best = p
			}
		}
		s = best
		if len(s) < 3 {
			return nil
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

const maxSet = 16

// literalBranches splits a regex without capture groups that alternates at its start
// ((?:hv[sb]|[sbr])\.[A-Za-z0-9_-]{24,}: Vault's hvs./hvb. tokens and its one-letter legacy
// ones), or at its top, into its branches, each with the rest of the regex: kept is the
// alternation of the branches that hold a literal of 3 bytes or more (which can be prefiltered,
// hv[sb]\.[A-Za-z0-9_-]{24,}), dropped the others. ok is false when no branch or every branch
// holds one (keywords then decides), or the regex is of another form.
func literalBranches(re string) (kept string, dropped []string, ok bool) {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil || p.CapNames() != nil && len(p.CapNames()) > 1 {
		return "", nil, false
	}
	var branches []*syntax.Regexp
	switch {
	case p.Op == syntax.OpAlternate:
		branches = p.Sub
	case p.Op == syntax.OpConcat && len(p.Sub) > 1 && p.Sub[0].Op == syntax.OpAlternate:
		for _, b := range p.Sub[0].Sub {
			branches = append(branches, &syntax.Regexp{Op: syntax.OpConcat, Flags: p.Flags, Sub: append([]*syntax.Regexp{b}, p.Sub[1:]...)})
		}
	default:
		return "", nil, false
	}
	var keep []string
	for _, b := range branches {
		if s := b.String(); len(keywords(s)) > 0 {
			keep = append(keep, s)
		} else {
			dropped = append(dropped, s)
		}
	}
	if len(keep) == 0 || len(dropped) == 0 {
		return "", nil, false
	}
	if len(keep) == 1 {
		return keep[0], dropped, true
	}
	return "(?:" + strings.Join(keep, "|") + ")", dropped, true
}

// exact returns the strings re matches when they are few (a literal, a small class, an
// alternation of those, a concatenation of those).
func exact(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
				if len(out) > 4 {
					return nil, false
				}
			}
		}
		return out, len(out) > 0
	case syntax.OpCapture:
		return exact(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			e, ok := exact(s)
			if !ok {
				return nil, false
			}
			out = append(out, e...)
		}
		return out, len(out) <= maxSet
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			e, ok := exact(s)
			if !ok {
				return nil, false
			}
			out = cross(out, e)
			if len(out) > maxSet {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// prefixes returns strings one of which starts every match of re (nil: none known).
func prefixes(re *syntax.Regexp) []string {
	if e, ok := exact(re); ok {
		return e
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return prefixes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return prefixes(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			p := prefixes(s)
			if p == nil {
				return nil
			}
			out = append(out, p...)
		}
		if len(out) <= maxSet {
			return out
		}
	case syntax.OpConcat:
		cur := []string{""}
		for _, s := range re.Sub {
			if e, ok := exact(s); ok && len(cross(cur, e)) <= maxSet {
				cur = cross(cur, e)
				continue
			}
			if p := prefixes(s); p != nil && len(cross(cur, p)) <= maxSet {
				cur = cross(cur, p)
			}
			break
		}
		if cur[0] != "" {
			return cur
		}
	}
	return nil
}

func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// required returns a set of strings one of which every match of re contains (nil: none known).
func required(re *syntax.Regexp) []string {
	if e, ok := exact(re); ok {
		return e
	}
	switch re.Op {
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			r := required(s)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	case syntax.OpConcat:
		// runs of exact parts multiply into candidate sets; the best is the one whose shortest
		// string is longest
		var best []string
		score := func(set []string) int {
			if len(set) == 0 {
				return -1
			}
			m := 1 << 30
			for _, s := range set {
				m = min(m, len(s))
			}
			return m
		}
		cur := []string{""}
		flush := func() {
			if len(cur) > 0 && cur[0] != "" && score(cur) > score(best) {
				best = cur
			}
			cur = []string{""}
		}
		for _, s := range re.Sub {
			if e, ok := exact(s); ok && len(cross(cur, e)) <= maxSet {
				cur = cross(cur, e)
				continue
			}
			// a run followed by a part whose matches start with one of few strings: A(?:KIA|SIA)
			if p := prefixes(s); len(p) > 0 && cur[0] != "" && len(cross(cur, p)) <= maxSet {
				cur = cross(cur, p)
			}
			flush()
			if r := required(s); score(r) > score(best) {
				best = r
			}
		}
		flush()
		return best
	}
	return nil
}

func moduleDir(mod string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(b, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", mod, err, m.Error)
	}
	return m.Dir, nil
}
