package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadsGoThroughViews keeps the class of bug closed: no code of the
// package reads the database through the connection pool (Store.db)
// itself, where each statement would see the database at its own moment.
// A read goes through a View (one read-only transaction) or through the
// write transaction of the change it belongs to; the pool is only for
// beginning those, closing, and opening the database (migrate looks at
// the schema version before it may write).
func TestReadsGoThroughViews(t *testing.T) {
	allowed := map[string]bool{"BeginTx": true, "Close": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "migrate" {
				continue
			}
			// Every use of X.db must be the receiver of an allowed method.
			usedAsReceiver := map[*ast.SelectorExpr]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "db" && allowed[sel.Sel.Name] {
						usedAsReceiver[inner] = true
					}
				}
				return true
			})
			// The writer's connection (writer.conn, taken from the pool
			// by Store.w.acquire) only begins transactions too: a method
			// of X.conn other than the allowed ones would read outside
			// one.
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "conn" && !allowed[sel.Sel.Name] {
						t.Errorf("%s: %s uses the writer's connection outside a transaction (%s); begin a transaction on it (Store.begin)",
							fset.Position(sel.Pos()), fn.Name.Name, src[fset.Position(sel.Pos()).Offset:fset.Position(sel.End()).Offset])
					}
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "db" && !usedAsReceiver[sel] {
					t.Errorf("%s: %s reads the database outside a transaction (%s); read through a View (Store.View) so that the read sees one snapshot",
						fset.Position(sel.Pos()), fn.Name.Name, src[fset.Position(sel.Pos()).Offset:fset.Position(sel.End()).Offset])
				}
				return true
			})
		}
	}
}
