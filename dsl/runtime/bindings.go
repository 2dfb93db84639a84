package runtime

// The private functions' yaegi bindings, derived from dsl/catalog. A
// private function is one catalog entry and one planner in dsl/release;
// the runtime adds nothing per function. It holds one conversion per
// result type (a release into a *SumResult, a *PCAResult, …), and builds
// each entry's binding, func(ds any, kws ...KW) R with R the entry's
// result type, around the shared runPrivate path. A new function whose
// result type exists needs no edit here.

import (
	"fmt"
	"reflect"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
)

// resultConv turns a release into a DSL result of type typ.
type resultConv struct {
	typ   reflect.Type
	build func(*release.Release) any
}

// results are the result conversions, keyed by the result type as the
// catalog writes it (Func.Result: "*SumResult").
var results = map[string]resultConv{}

// resultType makes build the conversion of the releases whose functions
// return T.
func resultType[T any](build func(*release.Release) T) {
	t := reflect.TypeFor[T]()
	results[resultTypeName(t)] = resultConv{typ: t, build: func(rel *release.Release) any { return build(rel) }}
}

// resultTypeName is t as the catalog names a result type: "*SumResult".
func resultTypeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return "*" + t.Elem().Name()
	}
	return t.Name()
}

func init() {
	resultType(pcaResult)
	resultType(fedRepResult)
	resultType(countResult)
	resultType(meanResult)
	resultType(sumResult)
	resultType(histogramResult)
	resultType(quantileResult)
	resultType(classifyJLResult)
	resultType(lowRankResult)
}

// resultOf returns the conversion of f's releases.
func resultOf(f *catalog.Func) (resultConv, error) {
	if f == nil || !f.Private {
		return resultConv{}, fmt.Errorf("not a private function")
	}
	conv, ok := results[f.Result]
	if !ok {
		return resultConv{}, fmt.Errorf("%s has no result conversion in this build (its result type %s has none)", f.Name, f.Result)
	}
	return conv, nil
}

// Result is the DSL result of fn for rel, the value a cell's call of fn
// returns (a *PCAResult, *CountResult, …): rendered with interp.Render it
// is what the kernel displays.
func Result(fn string, rel *release.Release) (any, error) {
	f, _ := catalog.Lookup(fn)
	conv, err := resultOf(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if rel == nil || rel.Receipt == nil {
		return nil, fmt.Errorf("%s: a release without a receipt", fn)
	}
	return safeBuild(fn, rel, conv.build)
}

// safeBuild runs build, turning a panic (a stored value of another type
// than fn releases, say) into an error: a reader's notebook must not
// crash the verifier.
func safeBuild(fn string, rel *release.Release, build func(*release.Release) any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%s: the stored release is not one %s makes (%T)", fn, fn, rel.Value)
		}
	}()
	return build(rel), nil
}

var (
	anyType = reflect.TypeFor[any]()
	kwsType = reflect.TypeFor[[]KW]()
)

// privateBinding is f's yaegi binding: a func(ds any, kws ...KW) R, R
// f's result type, so that cells see the typed result (res.Components,
// res.Value) as with a hand-written wrapper.
func (rt *Runtime) privateBinding(f *catalog.Func) (reflect.Value, error) {
	conv, err := resultOf(f)
	if err != nil {
		return reflect.Value{}, err
	}
	typ := reflect.FuncOf([]reflect.Type{anyType, kwsType}, []reflect.Type{conv.typ}, true)
	return reflect.MakeFunc(typ, func(in []reflect.Value) []reflect.Value {
		kws, _ := in[1].Interface().([]KW)
		v := reflect.ValueOf(rt.callPrivate(f, conv, in[0].Interface(), kws))
		if !v.IsValid() {
			v = reflect.Zero(conv.typ)
		}
		return []reflect.Value{v}
	}), nil
}

// callPrivate runs a call of the private function f: on a federation
// through f's federated path, if it has one (federate.go), else through
// runPrivate, and converts the release into f's result.
func (rt *Runtime) callPrivate(f *catalog.Func, conv resultConv, ds any, kws []KW) any {
	if fed, ok := federationOf(ds); ok {
		if run, ok := federatedRuns[f]; ok {
			return run(rt, f.Name, fed, kws)
		}
	}
	rel, _ := rt.runPrivate(f.Name, ds, kws)
	return conv.build(rel)
}
