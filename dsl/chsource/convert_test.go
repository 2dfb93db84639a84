package chsource

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"testing"
)

// The reader turns each TabSeparated field into what the execution core
// reads, by the column's type, and refuses what it cannot read exactly.
func TestConvert(t *testing.T) {
	big82, _ := new(big.Int).SetString("4835703278458516698824704", 10)
	neg, _ := new(big.Int).SetString("-170141183460469231731687303715884105727", 10)
	for _, c := range []struct {
		typ, field string
		want       any
	}{
		{"UInt64", "3000", int64(3000)},
		{"UInt64", "18446744073709551615", uint64(math.MaxUint64)},
		{"Int64", "-5", int64(-5)},
		{"Decimal(38, 0)", "4835703278458516698824704", big82},
		{"Decimal(38, 0)", "-170141183460469231731687303715884105727", neg},
		{"Nullable(Float64)", `\N`, nil},
		{"Nullable(Float64)", "-2.5", -2.5},
		{"Float64", "1e21", 1e21},
		{"Nullable(String)", `it\'s\ta\\b\n`, "it's\ta\\b\n"},
		{"String", "north", "north"},
		{"Array(Int64)", "[]", nil},
		{"Array(Int64)", "[0,7,3,1]", [][2]any{{int64(0), int64(3)}, {int64(7), int64(1)}}},
	} {
		got, err := convert(c.typ, c.field)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: %#v, %v; want %#v", c.typ, c.field, got, err, c.want)
		}
	}
	for _, c := range [][2]string{
		{"Decimal(38, 2)", "1.50"}, // not an integer sum
		{"Decimal(38, 0)", "1.5"},
		{"Array(Int64)", "[1,2,3]"}, // odd: not bins and counts
		{"Array(Int64)", "[1,x]"},
		{"Array(Float64)", "[1,2]"},
		{"UInt64", "-1"},
		{"Int64", "9223372036854775808"},
		{"Date", "2020-01-01"},
		{"String", `a\`},
	} {
		if got, err := convert(c[0], c[1]); err == nil {
			t.Errorf("%s %q: read as %#v", c[0], c[1], got)
		}
	}
}

// A URL is clickhouse://USER@HOST:PORT/DATABASE, never with a password.
func TestNewClient(t *testing.T) {
	c, err := newClient("clickhouse://reader@127.0.0.1:8123/analytics", "pw")
	if err != nil || c.endpoint != "http://127.0.0.1:8123/" || c.user != "reader" || c.database != "analytics" || c.password != "pw" {
		t.Errorf("%+v, %v", c, err)
	}
	if c, err := newClient("clickhouse://127.0.0.1:8123/db", ""); err != nil || c.user != "default" {
		t.Errorf("no user: %+v, %v", c, err)
	}
	for _, u := range []string{
		"clickhouse://reader:pw@127.0.0.1:8123/db",
		"clickhouse://reader@127.0.0.1:8123/db?password=pw",
		"clickhouse://reader@127.0.0.1/db",
		"clickhouse://reader@127.0.0.1:8123/",
		"clickhouse://reader@127.0.0.1:8123/a/b",
		"http://reader@127.0.0.1:8123/db",
	} {
		if _, err := newClient(u, ""); !errors.Is(err, ErrURL) {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestTypes(t *testing.T) {
	for _, typ := range []string{"Int8", "UInt64", "Float32", "Nullable(Float64)", "Decimal(18, 4)", "Decimal128(2)"} {
		if !Numeric(typ) || Text(typ) {
			t.Errorf("%s is numeric", typ)
		}
	}
	for _, typ := range []string{"String", "Nullable(String)"} {
		if Numeric(typ) || !Text(typ) {
			t.Errorf("%s is text", typ)
		}
	}
	for _, typ := range []string{"Date", "DateTime", "FixedString(3)", "Array(Int64)", "Nullable(Date)"} {
		if Numeric(typ) || Text(typ) {
			t.Errorf("%s is neither", typ)
		}
	}
}
