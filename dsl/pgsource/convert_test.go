package pgsource

import (
	"math/big"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// The statement's values reach the execution core exactly: sums of
// numeric as integers (an inexact one is an error), histograms as pairs.
func TestConvert(t *testing.T) {
	t.Parallel()
	huge, _ := new(big.Int).SetString("170141183460469231731687303715884105727000", 10)
	for _, c := range []struct {
		in      any
		want    any
		wantErr bool
	}{
		{pgtype.Numeric{Int: big.NewInt(-42), Valid: true}, big.NewInt(-42), false},
		{pgtype.Numeric{Int: big.NewInt(5), Exp: 2, Valid: true}, big.NewInt(500), false},
		{pgtype.Numeric{Int: big.NewInt(5000), Exp: -3, Valid: true}, big.NewInt(5), false},
		{pgtype.Numeric{Int: new(big.Int).Div(huge, big.NewInt(1000)), Exp: 3, Valid: true}, huge, false},
		{pgtype.Numeric{Int: big.NewInt(5001), Exp: -3, Valid: true}, nil, true},
		{pgtype.Numeric{NaN: true, Valid: true}, nil, true},
		{pgtype.Numeric{}, nil, false},
		{int32(7), int64(7), false},
		{"north", "north", false},
		{[]any{int64(1), int64(4), int64(10), int64(2)}, [][2]any{{int64(1), int64(10)}, {int64(4), int64(2)}}, false},
		{[]any{int64(1), int64(4), int64(10)}, nil, true},
		{[]any{int64(1), "x"}, nil, true},
	} {
		got, err := convert(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("%v: error %v", c.in, err)
			continue
		}
		if c.wantErr {
			continue
		}
		if w, ok := c.want.(*big.Int); ok {
			if g, ok := got.(*big.Int); !ok || g.Cmp(w) != 0 {
				t.Errorf("%v: got %v, want %v", c.in, got, w)
			}
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: got %#v, want %#v", c.in, got, c.want)
		}
	}
}
