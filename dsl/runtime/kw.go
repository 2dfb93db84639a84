package runtime

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
)

// KW is one keyword argument of a DSL call; the translator turns k=3 into
// __pn_kw("k", 3). Its fields are unexported: cells cannot build one
// (identifiers starting with __pn are reserved).
type KW struct {
	name  string
	value any
}

func newKW(name string, value any) KW { return KW{name: name, value: value} }

// blockKW names the KW that carries a call's budget block (see
// Runtime.blockArg); no keyword of the table can have this name.
const blockKW = "\x00block"

// args are the validated arguments of one call: every keyword of the
// function, given or defaulted, converted to its table type.
type args struct {
	*release.Args
	fn *catalog.Func
	// block is the budget block the call was written in, if any.
	block *block
	// deltaFromBlock: the call gave no delta and takes block's δ.
	deltaFromBlock bool
}

func (a *args) int(name string) int       { return a.Int(name) }
func (a *args) float(name string) float64 { return a.Float(name) }
func (a *args) str(name string) string    { return a.Str(name) }

// parseArgs checks kws against the function's table entry: unknown and
// repeated keywords, types, choices, required keywords, and eps/delta
// ranges for private functions. Errors name the keyword.
func parseArgs(name string, kws []KW) (*args, error) {
	f, ok := catalog.Lookup(name)
	if !ok {
		return nil, errorf(NameArgumentError, "%s is not a DSL function", name)
	}
	a := &args{Args: release.NewArgs(nil), fn: f}
	for _, kw := range kws {
		if kw.name == blockKW {
			a.block, _ = kw.value.(*block)
			continue
		}
		p, ok := f.Keyword(kw.name)
		if !ok {
			valid := f.KeywordNames()
			if len(valid) == 0 {
				return nil, errorf(NameArgumentError, "%s takes no keyword arguments (got %s=)", name, kw.name)
			}
			return nil, errorf(NameArgumentError, "%s: unknown keyword %s; valid keywords: %s", name, kw.name, strings.Join(valid, ", "))
		}
		if a.Given[kw.name] {
			return nil, errorf(NameArgumentError, "%s: keyword %s given twice", name, kw.name)
		}
		v, err := convert(p, kw.value)
		if err != nil {
			return nil, errorf(NameArgumentError, "%s: keyword %s: %v", name, kw.name, err)
		}
		a.Vals[kw.name], a.Given[kw.name] = v, true
	}
	for i := range f.Keywords {
		p := &f.Keywords[i]
		if a.Given[p.Name] {
			continue
		}
		if p.Name == "delta" && syntax.BlockDelta(f, func(k string) bool { return a.Given[k] }) {
			// A Gaussian call in a block with a δ is calibrated to it
			// (syntax.BlockDelta says why that is sound); the translator
			// gave the static pre-check the same δ.
			if a.block != nil && a.block.cap.Delta > 0 {
				a.Vals["delta"], a.deltaFromBlock = a.block.cap.Delta, true
				continue
			}
		}
		if p.Required && p.Name == "delta" && f.Private {
			if a.block != nil {
				return nil, errorf(NameArgumentError, "%s needs delta > 0, e.g. delta=1e-6: its noise is Gaussian; give delta= in the call, or add delta= to the %s's header and the call takes the block's δ", name, a.block.scope())
			}
			return nil, errorf(NameArgumentError, "%s needs delta > 0, e.g. delta=1e-6: its noise is Gaussian (inside a budget block with a δ the call may leave delta out: it takes the block's)", name)
		}
		if p.Required {
			return nil, errorf(NameArgumentError, "%s: keyword %s is required (%s)", name, p.Name, p.Doc)
		}
		v, err := p.DefaultValue()
		if err != nil {
			return nil, errorf(NameArgumentError, "%s: default of %s: %v", name, p.Name, err) // a table bug
		}
		a.Vals[p.Name] = v
	}
	if f.Private {
		eps, delta := a.float("eps"), a.float("delta")
		if !(eps > 0) || math.IsInf(eps, 0) {
			return nil, errorf(NameArgumentError, "%s: eps=%v: the privacy cost ε must be a finite number > 0", name, eps)
		}
		if !(delta >= 0 && delta < 1) {
			return nil, errorf(NameArgumentError, "%s: delta=%v: the privacy cost δ must satisfy 0 ≤ δ < 1", name, delta)
		}
	}
	return a, nil
}

// convert checks v against the parameter's type and choices.
func convert(p *catalog.Param, v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch p.Type {
	case "int":
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return int(rv.Int()), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if rv.Uint() > math.MaxInt32 {
				return nil, fmt.Errorf("%d is too large", rv.Uint())
			}
			return int(rv.Uint()), nil
		case reflect.Float32, reflect.Float64:
			f := rv.Float()
			if f == math.Trunc(f) && math.Abs(f) < 1<<31 {
				return int(f), nil
			}
			return nil, fmt.Errorf("want an integer, got %v", f)
		}
		return nil, fmt.Errorf("want an integer, got %s", typeName(v))
	case "float":
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return float64(rv.Int()), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return float64(rv.Uint()), nil
		case reflect.Float32, reflect.Float64:
			f := rv.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("want a finite number, got %v", f)
			}
			return f, nil
		}
		return nil, fmt.Errorf("want a number, got %s", typeName(v))
	case "string":
		if rv.Kind() != reflect.String {
			return nil, fmt.Errorf("want a string, got %s", typeName(v))
		}
		s := rv.String()
		if len(p.Choices) > 0 {
			for _, c := range p.Choices {
				if s == c {
					return s, nil
				}
			}
			var cs []string
			for _, c := range p.Choices {
				cs = append(cs, strconv.Quote(c))
			}
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(cs, ", "))
		}
		return s, nil
	case "bool":
		if rv.Kind() != reflect.Bool {
			return nil, fmt.Errorf("want true or false, got %s", typeName(v))
		}
		return rv.Bool(), nil
	case "[]string":
		if v == nil {
			return []string(nil), nil
		}
		if rv.Kind() == reflect.String {
			return []string{rv.String()}, nil
		}
		if rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() != reflect.String {
			return nil, fmt.Errorf("want a []string, got %s", typeName(v))
		}
		out := make([]string, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).String()
		}
		return out, nil
	}
	return v, nil
}

// typeName names a value's type without printing the value.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return interp.TypeName(reflect.TypeOf(v))
}

// noKeywords refuses keywords for functions that take none.
func noKeywords(name string, kws []KW) {
	if len(kws) > 0 {
		panic(errorf(NameArgumentError, "%s takes no keyword arguments (got %s=)", name, kws[0].name))
	}
}
