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
	seen := make(map[string]bool)
	for _, o := range offences {
		key := o.pos.Filename + " " + o.name
		if known[key] {
			seen[key] = true
			continue
		}
		t.Errorf("%v (at most %d lines and %d parameters: split it by responsibility)", o, MaxLines, MaxParams)
	}
	for key := range known {
		if !seen[key] {
			t.Errorf("%s is within the limits now: take it off the known list", key)
		}
	}
}

// known lists the functions over a limit when the check came in, by file
// and name. The list only shrinks: a function split off it must leave it,
// and nothing joins it.
var known = map[string]bool{
	"internal/simbroker/cluster.go Authorize": true,
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
