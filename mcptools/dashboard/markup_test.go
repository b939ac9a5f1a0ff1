package dashboard

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoMarkupFromData: markup (HTML written as it is: tag and attribute
// names, constant text) is made of constants only. A conversion to markup
// of anything but a constant would let data reach a page unescaped, so the
// package is type-checked and every conversion whose type is markup (by
// any spelling: an alias, parentheses, a type parameter) must convert a
// constant expression; there is no exception — the writer escapes values
// into the page without making them markup. Nor may the package import
// unsafe or reflect, which could make markup of a string without a
// conversion.
func TestNoMarkupFromData(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 5 {
		t.Fatalf("read only %d files", len(files))
	}
	imp, err := exportImporter(fset)
	if err != nil {
		t.Fatal(err)
	}
	found, typed, err := markupFromData(fset, files, imp)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: data would reach the page unescaped (give it to the writer as text or an attribute's value)", f)
	}
	if typed < 100 {
		t.Errorf("only %d expressions of type markup: is the check looking at the writer?", typed)
	}
}

// TestNoMarkupFromDataFails: the check above finds each way of making
// markup of data, and passes a constant.
func TestNoMarkupFromDataFails(t *testing.T) {
	const src = `package dashboard

import "unsafe"

type markup string

type alias = markup

const c = "<b>"

func conv[T ~string](s string) T { return T(s) }

func bad(s string) {
	_ = markup(s)
	_ = (markup)(s + c)
	_ = alias(s)
	_ = conv[markup](s)
	_ = *(*markup)(unsafe.Pointer(&s))
}

func good() { _ = markup(c + "x") }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "bad.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := markupFromData(fset, []*ast.File{f}, importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("no export data for %s", path)
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bad.go:3:8: imports unsafe", "bad.go:11:43: T(s)", "bad.go:14:6: markup(s)", "bad.go:15:6: (markup)(s + c)", "bad.go:16:6: alias(s)"}
	if !slices.Equal(found, want) {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}

// markupFromData type-checks a package's files and returns the
// conversions to its type markup (or to a type parameter) of anything but
// a constant, and its imports of unsafe and reflect, each as
// "file:line:col: what"; and how many expressions of type markup it saw.
func markupFromData(fset *token.FileSet, files []*ast.File, imp types.Importer) (found []string, typed int, err error) {
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: imp}).Check("dashboard", fset, files, info)
	if err != nil {
		return nil, 0, fmt.Errorf("type-checking the package: %w", err)
	}
	obj, ok := pkg.Scope().Lookup("markup").(*types.TypeName)
	if !ok {
		return nil, 0, fmt.Errorf("the package has no type markup: say in this test what the writer's trusted type is now")
	}
	for _, tv := range info.Types {
		if tv.Type != nil && types.Identical(tv.Type, obj.Type()) {
			typed++
		}
	}
	for _, f := range files {
		for _, spec := range f.Imports {
			if p := strings.Trim(spec.Path.Value, `"`); p == "unsafe" || p == "reflect" {
				found = append(found, fmt.Sprintf("%s: imports %s", fset.Position(spec.Pos()), p))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			fun := info.Types[call.Fun]
			if !fun.IsType() {
				return true
			}
			_, param := fun.Type.(*types.TypeParam)
			if !param && !types.Identical(fun.Type, obj.Type()) {
				return true
			}
			if info.Types[call.Args[0]].Value == nil {
				found = append(found, fmt.Sprintf("%s: %s", fset.Position(call.Pos()), types.ExprString(call)))
			}
			return true
		})
	}
	return found, typed, nil
}

// exportImporter imports the package's dependencies from their export
// data, as go list -export gives it.
func exportImporter(fset *token.FileSet) (types.Importer, error) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the export data of the package's dependencies: %w", err)
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if path, file, ok := strings.Cut(strings.TrimSpace(line), "="); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}), nil
}
