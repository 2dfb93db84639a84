package interp

import (
	"go/ast"
	"go/token"
	"strconv"

	"github.com/privnotes/privnotes/stdlib"
)

// universe are the predeclared identifiers yaegi knows (not min, max,
// clear: yaegi v0.16.1 lacks them).
var universe = map[string]bool{}

func init() {
	for _, n := range []string{"append", "cap", "close", "complex", "copy", "delete", "imag", "len", "make",
		"new", "panic", "print", "println", "real", "recover", "true", "false", "nil", "iota", "_",
		"bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8", "int16",
		"int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "any", "comparable"} {
		universe[n] = true
	}
}

// undefinedName returns the first identifier of the cell that is neither
// declared anywhere in the cell nor known to the session. It is
// deliberately coarse (any declaration anywhere in the cell counts, so it
// never rejects valid code for scoping reasons): its job is to stop a cell
// that yaegi would fail on before yaegi sees it, because a failed
// top-level ":=" leaves placeholder symbols behind in yaegi's scope (a
// later "min(1, 2)" then reads as a conversion to a type min) and yaegi
// reports it as "constant definition loop".
func undefinedName(chunks []chunk, known func(string) bool) (c *chunk, id *ast.Ident) {
	declared := map[string]bool{}
	dotUnknown := false
	for i := range chunks {
		ast.Inspect(chunkRoot(&chunks[i]), func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							declared[id.Name] = true
						}
					}
				}
			case *ast.RangeStmt:
				if n.Tok == token.DEFINE {
					for _, x := range []ast.Expr{n.Key, n.Value} {
						if id, ok := x.(*ast.Ident); ok {
							declared[id.Name] = true
						}
					}
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					declared[id.Name] = true
				}
			case *ast.TypeSpec:
				declared[n.Name.Name] = true
			case *ast.FuncDecl:
				declared[n.Name.Name] = true
			case *ast.Field:
				for _, id := range n.Names {
					declared[id.Name] = true
				}
			case *ast.ImportSpec:
				if n.Name != nil {
					declared[n.Name.Name] = true
				}
				if n.Name != nil && n.Name.Name == "." {
					path, _ := strconv.Unquote(n.Path.Value)
					syms, ok := stdlib.Symbols[path+"/"+pathBase(path)]
					if !ok {
						// a package compiled from source (slices):
						// its members are unknown here
						dotUnknown = true
					}
					for name := range syms {
						declared[name] = true
					}
				}
			case *ast.LabeledStmt:
				declared[n.Label.Name] = true
			}
			return true
		})
	}
	if dotUnknown {
		return nil, nil
	}
	for i := range chunks {
		ch := &chunks[i]
		if ch.kind == importChunk {
			continue
		}
		var found *ast.Ident
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			if found != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.File: // not the package clause
				for _, d := range n.Decls {
					ast.Inspect(d, visit)
				}
				return false
			case *ast.SelectorExpr:
				ast.Inspect(n.X, visit)
				return false
			case *ast.KeyValueExpr:
				// struct literal keys are field names
				if _, ok := n.Key.(*ast.Ident); !ok {
					ast.Inspect(n.Key, visit)
				}
				ast.Inspect(n.Value, visit)
				return false
			case *ast.BranchStmt:
				return false
			case *ast.LabeledStmt:
				ast.Inspect(n.Stmt, visit)
				return false
			case *ast.Ident:
				if !declared[n.Name] && !universe[n.Name] && !known(n.Name) {
					found = n
				}
			}
			return true
		}
		ast.Inspect(chunkRoot(ch), visit)
		if found != nil {
			return ch, found
		}
	}
	return nil, nil
}

func chunkRoot(c *chunk) ast.Node {
	if c.file != nil {
		return c.file
	}
	return c.body
}

// known reports whether name is defined in the session: a global, a
// declaration of an earlier cell, a bare export, a package name, or a
// member of a dot-imported package.
func (e *Engine) known(name string) bool {
	e.symMu.RLock()
	_, g := e.globals[name]
	_, d := e.decls[name]
	_, x := e.exports[name]
	_, dot := e.dotNames[name]
	e.symMu.RUnlock()
	if g || d || x || dot {
		return true
	}
	if _, ok := packages[name]; ok {
		return true
	}
	for _, p := range extraImports {
		if p == name {
			return true
		}
	}
	return false
}
