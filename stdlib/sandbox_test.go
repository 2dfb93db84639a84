package stdlib

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

// forbiddenPkgs are the packages whose types give a cell the host: files
// and directories, sockets, processes and signals, raw system calls,
// plugins, the runtime's internals, and reflect (its values read and write
// memory past the type system and call methods by index). A prefix ending
// in "/" covers a package tree.
var forbiddenPkgs = []string{
	"os", "os/", "io/fs", "io/ioutil", "net", "net/", "syscall", "internal/syscall/",
	"golang.org/x/sys/", "unsafe", "plugin", "runtime", "runtime/", "reflect",
	"path/filepath", "embed", "debug/", "log", "log/",
}

func forbiddenPkg(p string) bool {
	for _, f := range forbiddenPkgs {
		if p == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(p, f)) {
			return true
		}
	}
	return false
}

// reachable lists, for each forbidden type reachable from syms, one path
// to it: through function signatures, variables' and constants' types,
// exported struct fields and the exported methods of every type (of T and
// *T) met on the way. It is what a cell could get hold of by calling,
// reading and converting what the tables give it.
func reachable(syms map[string]map[string]reflect.Value) map[string]string {
	found := map[string]string{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, via string)
	walk = func(t reflect.Type, via string) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if t.Kind() == reflect.UnsafePointer {
			found["unsafe.Pointer"] = via
			return
		}
		if t.PkgPath() != "" && forbiddenPkg(t.PkgPath()) {
			found[t.String()] = via
			return
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(t.Elem(), via)
		case reflect.Map:
			walk(t.Key(), via)
			walk(t.Elem(), via)
		case reflect.Func:
			for i := 0; i < t.NumIn(); i++ {
				walk(t.In(i), via)
			}
			for i := 0; i < t.NumOut(); i++ {
				walk(t.Out(i), via)
			}
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				if f := t.Field(i); f.IsExported() || f.Anonymous {
					walk(f.Type, via+"."+f.Name)
				}
			}
		}
		for _, tt := range []reflect.Type{t, reflect.PointerTo(t)} {
			for i := 0; i < tt.NumMethod(); i++ {
				m := tt.Method(i)
				if m.IsExported() {
					walk(m.Type, via+"."+m.Name+"()")
				}
			}
		}
	}
	keys := make([]string, 0, len(syms))
	for k := range syms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		names := make([]string, 0, len(syms[k]))
		for n := range syms[k] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v := syms[k][n]
			if !v.IsValid() {
				continue
			}
			walk(v.Type(), path.Dir(k)+"."+n)
		}
	}
	return found
}

// TestNoAllowlistedSymbolReachesTheHost is derived from the tables
// themselves, not from a hand list: no symbol of an allowlisted package
// gives a cell, through any signature, field or method, a type of a
// package that opens files, sockets or processes, a reflect value or an
// unsafe pointer. Adding "os" (or a package that returns an *os.File)
// to the tables fails it, as TestReachableCatchesHostPackages shows.
func TestNoAllowlistedSymbolReachesTheHost(t *testing.T) {
	for typ, via := range reachable(Symbols) {
		t.Errorf("%s is reachable from the allowlisted symbols (via %s): withhold the symbol (withheld.go) or drop the package", typ, via)
	}
}

// TestDeniedPackagesNeverAllowlisted: whatever a walk finds, these import
// paths never join the allowlist.
func TestDeniedPackagesNeverAllowlisted(t *testing.T) {
	for _, p := range Allowlist {
		if forbiddenPkg(p) {
			t.Errorf("package %q is in the allowlist but is denied (files, sockets, processes or memory)", p)
		}
	}
}

// The walk can fail: tables holding os or os/exec, or a package whose
// function hands out an unsafe.Pointer, are caught.
func TestReachableCatchesHostPackages(t *testing.T) {
	fake := map[string]map[string]reflect.Value{
		"os/os":        {"Open": reflect.ValueOf(os.Open)},
		"os/exec/exec": {"Command": reflect.ValueOf(exec.Command)},
		"bytes/bytes":  {"Buffer": reflect.ValueOf((*fakeHolder)(nil))},
	}
	got := reachable(fake)
	for _, want := range []string{"os.File", "exec.Cmd"} {
		if _, ok := got[want]; !ok {
			t.Errorf("the walk missed %s; found %v", want, got)
		}
	}
	if _, ok := got["unsafe.Pointer"]; !ok {
		t.Errorf("the walk missed an unsafe.Pointer behind a struct field's method; found %v", got)
	}
	if len(reachable(map[string]map[string]reflect.Value{"x/x": {"F": reflect.ValueOf(fmt.Sprint)}})) != 0 {
		t.Errorf("fmt.Sprint reaches a forbidden type?")
	}
}

// fakeHolder hides an unsafe.Pointer two steps away (a field's method).
type fakeHolder struct{ Inner fakeInner }

type fakeInner struct{}

func (fakeInner) Raw() []struct{ P unsafe.Pointer } { return nil }
