package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// generated matches the header Go's convention puts on generated files.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// offence is one function over a limit.
type offence struct {
	pos    token.Position
	name   string
	lines  int
	params int
}

func (o offence) String() string {
	return fmt.Sprintf("%s:%d: %s: %d lines, %d parameters", o.pos.Filename, o.pos.Line, o.name, o.lines, o.params)
}

// TestFunctionSize fails on every function of the module (tests and
// generated files aside) longer than MaxLines or taking more than
// MaxParams parameters.
func TestFunctionSize(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	offences, err := scanModule(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offences {
		t.Errorf("%v (at most %d lines and %d parameters: split it by responsibility)", o, MaxLines, MaxParams)
	}
}

// scanModule walks the module rooted at root, nested modules (a go.mod
// below root), testdata and hidden directories aside.
func scanModule(root string) ([]offence, error) {
	var offences []offence
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(src) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		offences = append(offences, checkFile(fset, f, rel)...)
		return nil
	})
	return offences, err
}

// checkFile returns the functions of f over a limit, function literals
// included (a long closure is a long function).
func checkFile(fset *token.FileSet, f *ast.File, rel string) []offence {
	var offences []offence
	check := func(name string, typ *ast.FuncType, body *ast.BlockStmt, start token.Pos) {
		if body == nil {
			return
		}
		pos := fset.Position(start)
		pos.Filename = rel
		lines := fset.Position(body.Rbrace).Line - pos.Line + 1
		params := typ.Params.NumFields()
		if lines > MaxLines || params > MaxParams {
			offences = append(offences, offence{pos: pos, name: name, lines: lines, params: params})
		}
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok {
			continue
		}
		check(funcName(fn), fn.Type, fn.Body, fn.Pos())
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			check("func literal", lit.Type, lit.Body, lit.Pos())
		}
		return true
	})
	return offences
}

// funcName names fn as Type.Method or func.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch t := typ.(type) {
	case *ast.IndexExpr:
		typ = t.X
	case *ast.IndexListExpr:
		typ = t.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// The walker finds a function one line too long, a parameter list one
// too long (grouped names count one each; a receiver does not) and a
// long function literal, and nothing at the limits.
func TestCheckFileFindsOffences(t *testing.T) {
	body := func(lines int) string { return strings.Repeat("\t_ = 0\n", lines-2) }
	src := "package p\n\n" +
		"func atLimit() {\n" + body(MaxLines) + "}\n\n" +
		"func tooLong() {\n" + body(MaxLines+1) + "}\n\n" +
		"type T struct{}\n\n" +
		"func (T) five(a, b, c int, d string, e bool) {}\n\n" +
		"func (*T) six(a, b, c int, d string, e bool, f byte) {}\n\n" +
		"var v = func() {\n" + body(MaxLines+1) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range checkFile(fset, f, "p.go") {
		got = append(got, fmt.Sprintf("%s %d %d", o.name, o.lines, o.params))
	}
	want := []string{
		fmt.Sprintf("tooLong %d 0", MaxLines+1),
		"T.six 1 6",
		fmt.Sprintf("func literal %d 0", MaxLines+1),
	}
	if !slices.Equal(got, want) {
		t.Errorf("offences %q, want %q", got, want)
	}
}
