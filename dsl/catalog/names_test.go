package catalog

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A private function is declared in the catalog only: no non-test Go file
// elsewhere (generated code aside) holds a string literal that is, or
// starts with, a private function's name. Code that needs the name takes
// it from the entry (catalog.PrivateSum.Name); comments may name it.
func TestPrivateNamesOnlyInCatalog(t *testing.T) {
	root := filepath.Join("..", "..")
	var names []string
	for _, f := range Private() {
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		t.Fatal("the catalog lists no private function")
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "testdata", d.Name() == "vendor",
				rel == "api", rel == "dsl/catalog":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, name := range names {
				if strings.HasPrefix(s, name) {
					t.Errorf("%s: the string %s names the private function %s: take the name from its catalog entry", fset.Position(lit.Pos()), lit.Value, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files; the walk saw too little of the module", files)
	}
}
