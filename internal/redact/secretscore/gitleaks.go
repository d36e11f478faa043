// SPDX-License-Identifier: Apache-2.0

// Package secretscore scores the secret detectors of package redact on examples nobody here
// wrote: the true- and false-positive examples of the gitleaks rule definitions (module
// github.com/zricethezav/gitleaks/v8, cmd/generate/config/rules/*.go, MIT licence) and the
// detect-secrets test files in the corpus (secrets/detect-secrets/test_data, Apache-2.0).
//
// The gitleaks examples are Go expressions in the rule source files (tps and fps lists, built with
// string literals, utils.GenerateSampleSecret(s), secrets.NewSecret(regex), fmt.Sprintf, append
// and loops). They are read with go/parser and evaluated by a small interpreter; NewSecret draws
// from the regex with a fixed seed, so the examples are the same at every run. An example whose
// expression the interpreter does not know is skipped and counted.
package secretscore

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// GitleaksModule is the gitleaks release whose rule examples are scored; its config equals the
// corpus secrets/gitleaks/config/gitleaks.toml (commit b58d3f102cf3).
const GitleaksModule = "github.com/zricethezav/gitleaks/v8@v8.30.1"

// Example is one scored text.
type Example struct {
	Source   string // "gitleaks" or "detect-secrets"
	Family   string // gitleaks: rule file name without .go (aws, gitlab, ...); detect-secrets: file name
	RuleID   string // gitleaks rule id, or the detect-secrets label's kind
	Text     string
	Positive bool   // holds a secret
	Secret   string // the secret when known ("" for literal gitleaks examples)
	// IgnoreRule: findings of this rule are not judged (recordings hold real cookies)
	IgnoreRule string
	// NotScored: why a positive is left out of every figure ("" when it is scored): its text
	// holds only an identifier of the secret, or an empty password (NotScoredIdentifier,
	// NotScoredEmpty)
	NotScored string
}

// GitleaksStats counts what the extraction read.
type GitleaksStats struct {
	Files, Rules, Positives, Negatives, Skipped int
}

// GitleaksExamples reads every rule file of the gitleaks module in moduleDir
// (cmd/generate/config/rules) and returns its examples.
func GitleaksExamples(moduleDir string) ([]Example, GitleaksStats, error) {
	var st GitleaksStats
	dir := filepath.Join(moduleDir, "cmd", "generate", "config")
	samples, err := sampleTemplates(filepath.Join(dir, "utils", "generate.go"))
	if err != nil {
		return nil, st, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "rules", "*.go"))
	if err != nil {
		return nil, st, err
	}
	sort.Strings(files)
	var out []Example
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, st, err
		}
		family := strings.TrimSuffix(filepath.Base(f), ".go")
		n0 := len(out)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			in := &interp{vars: map[string]any{}, samples: samples, rng: rand.New(rand.NewPCG(uint64(len(fd.Name.Name)), 19))}
			in.block(fd.Body.List)
			id, _ := in.vars["$ruleID"].(string)
			if id == "" {
				continue
			}
			st.Rules++
			st.Skipped += in.skipped
			for _, tp := range in.list("tps") {
				out = append(out, Example{Source: "gitleaks", Family: family, RuleID: id, Text: tp.text, Positive: true, Secret: tp.secret})
				st.Positives++
			}
			for _, fp := range in.list("fps") {
				out = append(out, Example{Source: "gitleaks", Family: family, RuleID: id, Text: fp.text})
				st.Negatives++
			}
		}
		if len(out) > n0 {
			st.Files++
		}
	}
	if st.Positives == 0 {
		return nil, st, fmt.Errorf("%s: no examples read", dir)
	}
	return out, st, nil
}

// sampleTemplates reads the map literal of formats in utils.GenerateSampleSecrets.
func sampleTemplates(path string) ([]string, error) {
	af, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(af, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "GenerateSampleSecrets" {
			return true
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if bl, ok := kv.Value.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					if s, err := strconv.Unquote(bl.Value); err == nil {
						out = append(out, s)
					}
				}
			}
			return true
		})
		return false
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: GenerateSampleSecrets formats not found", path)
	}
	sort.Strings(out)
	return out, nil
}

// sample is a generated text and the secret inside it, when known.
type sample struct{ text, secret string }

type interp struct {
	vars    map[string]any // string, []sample
	samples []string
	rng     *rand.Rand
	skipped int
}

func (in *interp) list(name string) []sample {
	v, _ := in.vars[name].([]sample)
	return v
}

type unknown struct{ what string }

func (u unknown) Error() string { return "unknown " + u.what }

func (in *interp) block(stmts []ast.Stmt) {
	for _, s := range stmts {
		in.stmt(s)
	}
}

func (in *interp) stmt(s ast.Stmt) {
	switch x := s.(type) {
	case *ast.AssignStmt:
		if len(x.Lhs) != 1 || len(x.Rhs) != 1 {
			return
		}
		id, ok := x.Lhs[0].(*ast.Ident)
		if !ok {
			return
		}
		// r := config.Rule{RuleID: "..."}
		if cl, ok := x.Rhs[0].(*ast.CompositeLit); ok {
			if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Rule" {
				for _, e := range cl.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "RuleID" {
							if v, err := in.expr(kv.Value); err == nil {
								if s, ok := v.(sample); ok {
									in.vars["$ruleID"] = s.text
								}
							}
						}
					}
				}
				return
			}
		}
		v, err := in.expr(x.Rhs[0])
		if err != nil {
			if id.Name == "tps" || id.Name == "fps" {
				in.skipped++
			}
			return
		}
		in.vars[id.Name] = v
	case *ast.DeclStmt:
		gd, ok := x.Decl.(*ast.GenDecl)
		if !ok {
			return
		}
		for _, sp := range gd.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok || len(vs.Names) != len(vs.Values) {
				continue
			}
			for i, n := range vs.Names {
				if v, err := in.expr(vs.Values[i]); err == nil {
					in.vars[n.Name] = v
				}
			}
		}
	case *ast.RangeStmt:
		v, err := in.expr(x.X)
		if err != nil {
			return
		}
		items, ok := v.([]sample)
		if !ok {
			return
		}
		val, _ := x.Value.(*ast.Ident)
		if val == nil {
			if k, ok := x.Key.(*ast.Ident); ok && x.Value == nil {
				_ = k // index-only loops are not used for examples
			}
			return
		}
		for _, it := range items {
			in.vars[val.Name] = it
			in.block(x.Body.List)
		}
	case *ast.BlockStmt:
		in.block(x.List)
	}
}

func (in *interp) expr(e ast.Expr) (any, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return sample{text: s}, err
		}
		if x.Kind == token.INT {
			return sample{text: x.Value}, nil
		}
	case *ast.ParenExpr:
		return in.expr(x.X)
	case *ast.Ident:
		if v, ok := in.vars[x.Name]; ok {
			return v, nil
		}
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			break
		}
		a, err := in.str(x.X)
		if err != nil {
			return nil, err
		}
		b, err := in.str(x.Y)
		if err != nil {
			return nil, err
		}
		return sample{text: a.text + b.text, secret: a.secret + b.secret}, nil
	case *ast.CompositeLit:
		var out []sample
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value // map[path]example: the example
			}
			v, err := in.expr(el)
			if err != nil {
				in.skipped++
				continue
			}
			switch y := v.(type) {
			case sample:
				out = append(out, y)
			case []sample:
				out = append(out, y...)
			}
		}
		return out, nil
	case *ast.CallExpr:
		return in.call(x)
	}
	return nil, unknown{fmt.Sprintf("%T", e)}
}

func (in *interp) str(e ast.Expr) (sample, error) {
	v, err := in.expr(e)
	if err != nil {
		return sample{}, err
	}
	s, ok := v.(sample)
	if !ok {
		return sample{}, unknown{"non-string operand"}
	}
	return s, nil
}

func (in *interp) call(x *ast.CallExpr) (any, error) {
	name := ""
	switch f := x.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		if p, ok := f.X.(*ast.Ident); ok {
			name = p.Name + "." + f.Sel.Name
		}
	}
	args := func() ([]sample, error) {
		var out []sample
		for _, a := range x.Args {
			s, err := in.str(a)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	pattern := map[string]string{
		"utils.Numeric": `[0-9]{%s}`, "utils.Hex": `[a-f0-9]{%s}`, "utils.AlphaNumeric": `[a-z0-9]{%s}`,
		"utils.AlphaNumericExtendedShort": `[a-z0-9_-]{%s}`, "utils.AlphaNumericExtended": `[a-z0-9=_\-]{%s}`,
		"utils.AlphaNumericExtendedLong": `[a-z0-9\/=_\+\-]{%s}`,
	}
	switch name {
	case "append":
		if len(x.Args) == 0 {
			break
		}
		base, err := in.expr(x.Args[0])
		if err != nil {
			return nil, err
		}
		list, _ := base.([]sample)
		list = append([]sample(nil), list...)
		for _, a := range x.Args[1:] {
			v, err := in.expr(a)
			if err != nil {
				in.skipped++
				continue
			}
			switch y := v.(type) {
			case sample:
				list = append(list, y)
			case []sample:
				list = append(list, y...)
			}
		}
		return list, nil
	case "utils.Hex8_4_4_4_12":
		return sample{text: `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`}, nil
	case "secrets.NewSecret":
		a, err := args()
		if err != nil || len(a) != 1 {
			return nil, unknown{"NewSecret args"}
		}
		s, err := generate(a[0].text, in.rng)
		if err != nil {
			return nil, err
		}
		return sample{text: s, secret: s}, nil
	case "utils.GenerateSampleSecret":
		a, err := args()
		if err != nil || len(a) != 2 {
			return nil, unknown{"GenerateSampleSecret args"}
		}
		return sample{text: fmt.Sprintf("%s_api_token = \"%s\"", a[0].text, a[1].text), secret: a[1].text}, nil
	case "utils.GenerateSampleSecrets":
		a, err := args()
		if err != nil || len(a) != 2 {
			return nil, unknown{"GenerateSampleSecrets args"}
		}
		rep := strings.NewReplacer("{i}", a[0].text, "{I}", strings.ToUpper(a[0].text), "{s}", a[1].text)
		out := make([]sample, len(in.samples))
		for i, t := range in.samples {
			out[i] = sample{text: rep.Replace(t), secret: a[1].text}
		}
		return out, nil
	case "fmt.Sprintf":
		a, err := args()
		if err != nil || len(a) == 0 {
			return nil, unknown{"Sprintf args"}
		}
		vs := make([]any, len(a)-1)
		sec := ""
		for i, s := range a[1:] {
			vs[i] = s.text
			sec += s.secret
		}
		return sample{text: fmt.Sprintf(a[0].text, vs...), secret: sec}, nil
	case "strings.Repeat":
		if len(x.Args) == 2 {
			s, err := in.str(x.Args[0])
			if err != nil {
				return nil, err
			}
			n, err := in.str(x.Args[1])
			if err != nil {
				return nil, err
			}
			k, err := strconv.Atoi(n.text)
			if err != nil {
				return nil, err
			}
			return sample{text: strings.Repeat(s.text, k)}, nil
		}
	default:
		if p, ok := pattern[name]; ok {
			a, err := args()
			if err != nil || len(a) != 1 {
				return nil, unknown{name + " args"}
			}
			return sample{text: fmt.Sprintf(p, a[0].text)}, nil
		}
	}
	return nil, unknown{"call " + name}
}

// ModuleDir returns the directory of GitleaksModule in the module cache ($GITLEAKS_MODULE_DIR
// when set), downloading it with `go mod download -json` when needed.
func ModuleDir() (string, error) {
	if d := os.Getenv("GITLEAKS_MODULE_DIR"); d != "" {
		return d, nil
	}
	return downloadModule(GitleaksModule)
}
