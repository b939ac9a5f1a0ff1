package dashboard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoMarkupFromData: markup (HTML written as it is) is made of
// constants only. A conversion markup(x) of anything but a constant
// expression would let data reach a page unescaped, so every conversion in
// the package's files is checked, by their syntax: its operand must be
// string literals and constants joined by +.
func TestNoMarkupFromData(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]bool{}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						consts[n.Name] = true
					}
				}
			}
		}
	}
	if len(parsed) < 5 {
		t.Fatalf("read only %d files", len(parsed))
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "markup" && len(call.Args) == 1 && !constant(call.Args[0], consts) {
				t.Errorf("%s: markup(...) of something that is not a constant: data would reach the page unescaped (write it with htmlWriter.text)", fset.Position(call.Pos()))
			}
			return true
		})
	}
}

// constant reports whether e is string literals and package constants
// joined by +.
func constant(e ast.Expr, consts map[string]bool) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Kind == token.STRING
	case *ast.Ident:
		return consts[x.Name]
	case *ast.ParenExpr:
		return constant(x.X, consts)
	case *ast.BinaryExpr:
		return x.Op == token.ADD && constant(x.X, consts) && constant(x.Y, consts)
	}
	return false
}

// TestNoMarkupFromDataFails: the check above finds a conversion of data.
func TestNoMarkupFromDataFails(t *testing.T) {
	dir := t.TempDir()
	src := "package dashboard\n\nconst c = \"<b>\"\n\nfunc bad(s string) { _ = markup(s); _ = markup(c + \"x\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "bad.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var bad, good int
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 1 {
			if constant(call.Args[0], map[string]bool{"c": true}) {
				good++
			} else {
				bad++
			}
		}
		return true
	})
	if bad != 1 || good != 1 {
		t.Errorf("found %d conversions of data and %d of constants, want 1 and 1", bad, good)
	}
}
