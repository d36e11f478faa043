// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// VelesModule is the OSV-SCALIBR release whose Veles detector tests are scored; the embedded
// veles_rules.json of package redact is generated from the same release.
const VelesModule = "github.com/google/osv-scalibr@v0.5.3"

// VelesExamples reads the detector tests of every Veles family (veles/secrets/<family>/
// *detector*_test.go of the module in moduleDir). Each table case with an input is one example:
// positive when its want lists secrets (Secret is the longest string field of them that the input
// holds), negative when it lists none. Each velestest.AcceptDetector call is one positive (its
// example, without the padding the acceptance test adds).
func VelesExamples(moduleDir string) ([]Example, error) {
	root := filepath.Join(moduleDir, "veles", "secrets")
	fams, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Example
	fset := token.NewFileSet()
	for _, fam := range fams {
		if !fam.IsDir() || fam.Name() == "common" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, fam.Name(), "*detector*_test.go"))
		sort.Strings(files)
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				return nil, err
			}
			in := &interp{vars: map[string]any{}, rng: rand.New(rand.NewPCG(7, 11))}
			for _, d := range af.Decls {
				if gd, ok := d.(*ast.GenDecl); ok {
					in.stmt(&ast.DeclStmt{Decl: gd})
				}
			}
			// constants declared in test functions (tests build inputs from them)
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					for _, st := range fd.Body.List {
						switch st.(type) {
						case *ast.DeclStmt, *ast.AssignStmt:
							in.stmt(st)
						}
					}
				}
			}
			// a test of the cases Veles' detector is known to miss (gcpsak's
			// TestDetector_falseNegatives: service account files base64-encoded, as a Python dict,
			// in HCL) lists texts that hold the credential: they are no negatives
			var misses []*ast.FuncDecl
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && strings.Contains(strings.ToLower(fd.Name.Name), "falsenegative") {
					misses = append(misses, fd)
				}
			}
			ast.Inspect(af, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CompositeLit:
					if e, ok := in.velesCase(x, fam.Name()); ok {
						for _, fd := range misses {
							if !e.Positive && x.Pos() >= fd.Pos() && x.End() <= fd.End() {
								e.NotScored = NotScoredKnownMiss
							}
						}
						out = append(out, e)
					}
				case *ast.CallExpr:
					if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "AcceptDetector" && len(x.Args) >= 4 {
						if ex, err := in.str(x.Args[2]); err == nil && ex.text != "" {
							e := Example{Source: "veles", Family: fam.Name(), RuleID: "acceptance", Text: ex.text, Positive: true}
							e.Secret, e.NotScored = in.longestField(x.Args[3], ex.text)
							out = append(out, e)
						}
					}
				}
				return true
			})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no examples read", root)
	}
	return out, nil
}

// velesCase reads one table case {input: ..., want: ...} (hashicorpvault's tables name the
// field expected).
func (in *interp) velesCase(cl *ast.CompositeLit, fam string) (Example, bool) {
	var input, want ast.Expr
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch k.Name {
		case "input":
			input = kv.Value
		case "want", "expected":
			want = kv.Value
		}
	}
	if input == nil {
		return Example{}, false
	}
	s, err := in.str(input)
	if err != nil || s.text == "" {
		in.skipped++
		return Example{}, false
	}
	e := Example{Source: "veles", Family: fam, RuleID: "table", Text: s.text}
	if w, ok := want.(*ast.CompositeLit); ok && len(w.Elts) > 0 {
		if _, isSlice := w.Type.(*ast.ArrayType); !isSlice {
			return Example{}, false // a validation status or another kind of want
		}
		e.Positive = true
		e.Secret, e.NotScored = in.longestField(w, s.text)
	} else if want != nil {
		if id, ok := want.(*ast.Ident); !ok || id.Name != "nil" {
			return Example{}, false // not a detection case
		}
	}
	return e, true
}

// longestField returns the longest string field value inside e that text holds ("" if none),
// preferring the fields that hold the credential to those that name or pair it
// (identifierField: ClientID, AccessID, RoleID, PublicB64, Username): a Veles secret of two
// halves (bitwardenoauth2access.Token{ClientID, ClientSecret}, gcshmackey.HMACKey{AccessID,
// Secret}, vapid.Key{PrivateB64, PublicB64}) is neutralised when its secret half is gone, and
// the identifier or public half, often the longer, is not a credential: runagain keeps public
// keys and ids by design. Where the text labels the halves the other way round (a name saying
// public before the secret half, one saying private or secret before the other: Veles' vapid
// test that swaps them), the score follows the text, as runagain reads it: the half it names
// private is the credential. notScored says why the example is not scored: its text holds only
// an identifier of the secret (hashicorpvault's role_id alone; Veles' secret, runagain's id),
// or the credential is an empty password, which issue 33 lets pass (urlcreds'
// http://user:@host).
func (in *interp) longestField(e ast.Expr, text string) (secret, notScored string) {
	best, bestID := "", ""
	ast.Inspect(e, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		v, err := in.str(kv.Value)
		if err != nil || !strings.Contains(text, v.text) {
			return true
		}
		if k, ok := kv.Key.(*ast.Ident); ok && identifierField(k.Name) {
			if len(v.text) > len(bestID) {
				bestID = v.text
			}
		} else if len(v.text) > len(best) {
			best = v.text
		}
		return true
	})
	switch {
	case best == "" && bestID != "":
		return bestID, NotScoredIdentifier
	case emptyPassword(best):
		return best, NotScoredEmpty
	case best != "" && bestID != "" && labelledBefore(text, best, "public") && !labelledBefore(text, best, "private") &&
		(labelledBefore(text, bestID, "private") || labelledBefore(text, bestID, "secret")):
		return bestID, ""
	}
	return best, ""
}

// Reasons a positive example is not scored (Example.NotScored).
const (
	NotScoredIdentifier = "only an identifier"
	NotScoredEmpty      = "an empty password"
	NotScoredKnownMiss  = "a known miss of Veles" // a text its own test says holds a credential Veles does not find
)

// labelledBefore reports whether the first occurrence of v in text follows word (lower case) in
// the 64 bytes before it on its line: the name the text gives the value.
func labelledBefore(text, v, word string) bool {
	i := strings.Index(text, v)
	if i < 0 {
		return false
	}
	lo := max(0, i-64)
	if nl := strings.LastIndexByte(text[lo:i], '\n'); nl >= 0 {
		lo += nl + 1
	}
	return strings.Contains(strings.ToLower(text[lo:i]), word)
}

// emptyPassword reports whether v is a URL whose userinfo holds a user and an empty password
// (http://user:@example.com): no credential, as issue 33 has empty values pass.
func emptyPassword(v string) bool {
	i := strings.Index(v, "://")
	if i < 0 {
		return false
	}
	rest := v[i+3:]
	at := strings.IndexByte(rest, '@')
	if at < 0 || strings.ContainsAny(rest[:at], "/?#") {
		return false
	}
	c := strings.IndexByte(rest[:at], ':')
	return c > 0 && c == at-1
}

// identifierField reports whether a field of a Veles secret names or pairs the credential rather
// than holding it: a public half (PublicB64, PublicKey) or an identifier (ClientID, AccessID,
// RoleID, Username, UserEmail, RepoURL, ServiceName), unless the name says secret (Vault's
// SecretID is the credential of an AppRole).
func identifierField(name string) bool {
	if strings.Contains(name, "Public") {
		return true
	}
	if strings.Contains(name, "Secret") {
		return false
	}
	for _, suf := range []string{"ID", "Id", "Username", "Email", "URL", "Name"} {
		if strings.HasSuffix(name, suf) && name != "FullURL" {
			return true
		}
	}
	return false
}

// VelesModuleDir returns the directory of VelesModule in the module cache
// ($VELES_MODULE_DIR when set), downloading it with `go mod download -json` when needed.
func VelesModuleDir() (string, error) {
	if d := os.Getenv("VELES_MODULE_DIR"); d != "" {
		return d, nil
	}
	return downloadModule(VelesModule)
}

func downloadModule(mod string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, m.Error)
	}
	return m.Dir, nil
}

// FakeLooking reports whether an example's secret is written to look fake: it holds an example
// word (test, example, placeholder, fake, dummy, sample, xxx), a run of 6 or more of one byte
// (aaaaaa) or a counting run of 8 or more (abcdefgh, 12345678). Veles' tests use many such handwritten values; runagain keeps
// obviously fake values by design, so the score reports recall with and without them.
func FakeLooking(secret string) bool {
	l := strings.ToLower(secret)
	for _, w := range []string{"test", "example", "placeholder", "fake", "dummy", "sample", "xxx"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	same := 1
	for i := 1; i < len(l); i++ {
		if l[i] == l[i-1] {
			if same++; same >= 6 {
				return true // a filler run: aaaaaa, 000000
			}
		} else {
			same = 1
		}
	}
	run := 1
	for i := 1; i < len(l); i++ {
		if l[i] == l[i-1]+1 && (isLowerOrDigit(l[i])) {
			run++
			if run >= 8 {
				return true
			}
		} else {
			run = 1
		}
	}
	return false
}

func isLowerOrDigit(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
