package chsource_test

import (
	"testing"

	"github.com/privnotes/privnotes/internal/chtest"
)

func TestZZProbe(t *testing.T) {
	srv := chtest.Start(t)
	for _, e := range []string{"version()", "round(toFloat64(0.5))", "round(toFloat64(1.5))", "round(toFloat64(2.5))", "round(toFloat64(-0.5))", "round(toFloat64(-2.5))", "round(toFloat64(0.49999999999999994))",
		"round(toFloat64(4503599627370495.5))", "round(toFloat64(-4503599627370497))", "toInt64(round(toFloat64(-2.5)))", "toDecimal128(toFloat64(2.7), 0)", "toDecimal128(toFloat64(-2.5), 0)", "toDecimal128(round(toFloat64(-2.5)), 0)",
		"toTypeName(round(toFloat64(2.5)))", "round(CAST(NULL AS Nullable(Float64)))", "toInt64(toFloat64(1e300))", "round(toFloat64(281474976710656.5))", "round(toFloat64(1e300))", "roundBankers(toFloat64(2.5))"} {
		t.Logf("%s = %s", e, srv.Query(t, "SELECT "+e))
	}
}
