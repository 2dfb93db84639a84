package sqlplan

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The example, used by several tests.
const example = `SELECT region, sex, COUNT(*) AS n, AVG(income, 0, 100000) AS avg_income
FROM people WHERE age BETWEEN 30 AND 64 OR region IN ('north', 'east')
GROUP BY region, sex`

func TestPlanAccepts(t *testing.T) {
	t.Parallel()
	type agg struct {
		name   string
		kind   AggKind
		lo, hi float64
		bounds BoundsSource
		q      float64
	}
	cases := []struct {
		query  string
		server string
		keys   []string // key names
		aggs   []agg
		outs   []string // output names in order
	}{
		{example, "", []string{"region", "sex"},
			[]agg{{"n", Count, 0, 0, NoBounds, 0}, {"avg_income", Avg, 0, 100000, FromQuery, 0.5}},
			[]string{"region", "sex", "n", "avg_income"}},
		{"SELECT COUNT(*) FROM srv.people", "srv", nil, []agg{{"count", Count, 0, 0, NoBounds, 0}}, []string{"count"}},
		{"SELECT SUM(income), VARIANCE(age, 18, 90), STDDEV(age) AS sd, QUANTILE(income, 0.9, 0, 1e5), MEDIAN(age) FROM people",
			"", nil, []agg{
				{"sum_income", Sum, 0, 200000, FromSchema, 0},
				{"variance_age", Variance, 18, 90, FromQuery, 0.5},
				{"sd", Stddev, 0, 120, FromSchema, 0.5},
				{"quantile_income", Quantile, 0, 1e5, FromQuery, 0.9},
				{"median_age", Quantile, 0, 120, FromSchema, 0.5},
			}, []string{"sum_income", "variance_age", "sd", "quantile_income", "median_age"}},
		{"SELECT floor(age / 10) AS band, COUNT(DISTINCT user) FROM people GROUP BY band", "", []string{"band"},
			[]agg{{"count_distinct_user", CountDistinct, 0, 0, NoBounds, 0}}, []string{"band", "count_distinct_user"}},
		{"SELECT COUNT(*) FROM people WHERE NOT (city = 'Oslo') AND hours IS NOT NULL AND income > -1.5 AND age NOT IN (1, 2) AND COALESCE(hours, 0) < 40", "", nil,
			[]agg{{"count", Count, 0, 0, NoBounds, 0}}, []string{"count"}},
		{"SELECT CASE WHEN age < 18 THEN 'minor' ELSE 'adult' END AS grp, SUM(ln(income + 1) * 2, 0, 30) AS s FROM people GROUP BY CASE WHEN age < 18 THEN 'minor' ELSE 'adult' END", "",
			[]string{"grp"}, []agg{{"s", Sum, 0, 30, FromQuery, 0}}, []string{"grp", "s"}},
		{"SELECT year(born) AS y, AVG(CAST(age AS INTEGER), 0, 120) FROM people WHERE date_part('month', born) = 1 GROUP BY year(born)", "",
			[]string{"y"}, []agg{{"avg_2", Avg, 0, 120, FromQuery, 0}}, []string{"y", "avg_2"}},
		{"SELECT people.region, COUNT(*) FROM people WHERE least(age, 50) + greatest(abs(hours), exp(1), round(hours, 1)) > 3 GROUP BY region", "",
			[]string{"region"}, []agg{{"count", Count, 0, 0, NoBounds, 0}}, []string{"region", "count"}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			p, err := plan(t, c.query, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Dataset != "people" || p.Server != c.server {
				t.Errorf("dataset %q.%q, want %q.people", p.Server, p.Dataset, c.server)
			}
			var keys []string
			for _, k := range p.Keys {
				keys = append(keys, k.Name)
			}
			if !reflect.DeepEqual(keys, c.keys) {
				t.Errorf("keys %q, want %q", keys, c.keys)
			}
			var aggs []agg
			for _, a := range p.Aggregates {
				aggs = append(aggs, agg{a.Name, a.Kind, a.Lo, a.Hi, a.Bounds, a.Q})
			}
			for i := range c.aggs {
				if c.aggs[i].q == 0 && (c.aggs[i].kind != Quantile) {
					c.aggs[i].q = aggs[i].q // Q is meaningful for quantiles only
				}
			}
			if !reflect.DeepEqual(aggs, c.aggs) {
				t.Errorf("aggregates\n%v\nwant\n%v", aggs, c.aggs)
			}
			var outs []string
			for _, o := range p.Outputs {
				if o.Key >= 0 {
					outs = append(outs, p.Keys[o.Key].Name)
				} else {
					outs = append(outs, p.Aggregates[o.Agg].Name)
				}
			}
			if !reflect.DeepEqual(outs, c.outs) {
				t.Errorf("outputs %q, want %q", outs, c.outs)
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		query     string
		construct string // in Error.Construct
		hint      string // in Error.Msg
	}{
		{"INSERT INTO people VALUES (1)", "statement", "SELECT"},
		{"SELEC COUNT(*) FROM people", "syntax", "SELEC"},
		{"SELECT region FROM people GROUP BY region", "SELECT", "COUNT(*)"},
		{"SELECT * FROM people", "SELECT *", "GROUP BY"},
		{"SELECT COUNT(*) FROM people LIMIT 3", "LIMIT", "remove"},
		{"SELECT COUNT(*) FROM people OFFSET 3", "OFFSET", "remove"},
		{"SELECT region, COUNT(*) FROM people GROUP BY region ORDER BY region", "ORDER BY", "sort the released table"},
		{"SELECT COUNT(*) FROM read_csv('/etc/passwd')", "read_csv()", "registered dataset"},
		{"SELECT COUNT(*) FROM read_parquet('x.parquet')", "read_parquet()", "registered dataset"},
		{"SELECT COUNT(*) FROM 'people.csv'", "FROM \"people.csv\"", "file path"},
		{"SELECT COUNT(*) FROM people; SELECT COUNT(*) FROM people", "second statement", "one SELECT"},
		{"SELECT SUM(random(), 0, 1) FROM people", "random()", "deterministic"},
		{"SELECT COUNT(*) FROM people WHERE born < now()", "now()", "deterministic"},
		{"SELECT SUM(salary, 0, 1) FROM people", `column "salary"`, "no such column"},
		{"SELECT AVG(hours) FROM people", `column "hours"`, "--bounds hours=lo:hi"},
		{"SELECT AVG(hours) FROM people", `column "hours"`, "AVG(hours, lo, hi)"},
		{"SELECT age, COUNT(*) FROM people GROUP BY region", "age", "GROUP BY"},
		{"SELECT region, COUNT(*) FROM people GROUP BY region HAVING COUNT(*) > 5", "HAVING", "WHERE"},
		{"SELECT COUNT(*) FROM people a JOIN people b ON a.user = b.user", "JOIN", "one dataset"},
		{"SELECT COUNT(*) FROM people, people", "JOIN", "one dataset"},
		{"SELECT COUNT(*) FROM (SELECT * FROM people)", "subquery", "registered dataset"},
		{"SELECT COUNT(*) FROM people WHERE age IN (SELECT 1)", "subquery", "not accepted"},
		{"WITH p AS (SELECT 1) SELECT COUNT(*) FROM people", "WITH", "not accepted"},
		{"SELECT COUNT(*) FROM people UNION SELECT COUNT(*) FROM people", "UNION", "set operations"},
		{"SELECT SUM(age) OVER () FROM people", "window function", "GROUP BY"},
		{"SELECT DISTINCT region FROM people", "DISTINCT", "GROUP BY"},
		{"SELECT COUNT(DISTINCT region) FROM people", "COUNT(DISTINCT region)", "counts users"},
		{"SELECT SUM(DISTINCT age) FROM people", "sum(DISTINCT …)", "COUNT(DISTINCT"},
		{"SELECT COUNT(age) FROM people", "COUNT(expr)", "COUNT(*)"},
		{"SELECT SUM(city, 0, 1) FROM people", "sum()", "numeric"},
		{"SELECT COUNT(*) FROM people WHERE city + 1 > 2", "city", "arithmetic"},
		{"SELECT COUNT(*) FROM people WHERE region = 1", "region", "mixes"},
		{"SELECT COUNT(*) FROM people WHERE age", "WHERE", "condition"},
		{"SELECT SUM(age, 10, 0) FROM people", "sum()", "lo < hi"},
		{"SELECT SUM(age, 0, hours) FROM people", "sum()", "literals"},
		{"SELECT SUM(age * 2) FROM people", "sum()", "sum(expr, lo, hi)"},
		{"SELECT QUANTILE(age, 1.5) FROM people", "quantile()", "between 0 and 1"},
		{"SELECT COUNT(*) FROM people WHERE age > COUNT(*)", "count_star()", "whole SELECT item"},
		{"SELECT SUM(SUM(age)) FROM people", "sum()", "whole SELECT item"},
		{"SELECT COUNT(*) FROM people TABLESAMPLE 10%", "TABLESAMPLE", "random"},
		{"SELECT COUNT(*) FROM people WHERE city LIKE 'O%'", "operator ~~", "="},
		{"SELECT COUNT(*) FROM people WHERE sqrt(age) > 1", "sqrt()", "not accepted"},
		{"SELECT COUNT(*) FILTER (WHERE age > 1) FROM people", "FILTER", "WHERE"},
		{"SELECT region, COUNT(*) FROM people GROUP BY 1", "GROUP BY position", "expression itself"},
		{"SELECT region, COUNT(*) FROM people GROUP BY ROLLUP (region)", "GROUPING SETS", "one query per grouping"},
		{"SELECT COUNT(*) FROM db.main.people", "FROM db", "server.name"},
		{"SELECT COUNT(*) FROM people WHERE other.age > 1", `column "other.age"`, "qualified"},
		{"SELECT COUNT(*) AS x, SUM(age) AS x FROM people", `output "x"`, "distinct aliases"},
		{"SELECT floor(income) AS i, COUNT(*) FROM people GROUP BY floor(income)", "GROUP BY floor", "more than 10000"},
		{"SELECT COUNT(*) FROM people WHERE CAST(born AS DOUBLE) > 1", "CAST", "numbers and strings"},
		{"SELECT COUNT(*) FROM people WHERE CAST(age AS DATE) IS NULL", "CAST AS DATE", "DOUBLE, INTEGER and VARCHAR"},
		{"SELECT COUNT(*) FROM people WHERE 12345678901234567890 > age", "literal", "out of range"},
		{"SELECT COUNT(*) FROM people WHERE age > 1.0e400", "query", "out of range"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			_, err := plan(t, c.query, Options{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if !strings.Contains(e.Construct, c.construct) || !strings.Contains(e.Msg, c.hint) {
				t.Errorf("got %q / %q, want the construct to hold %q and the message %q", e.Construct, e.Msg, c.construct, c.hint)
			}
		})
	}
}

func TestKeyDomains(t *testing.T) {
	t.Parallel()
	nums := func(a, b float64) []Value {
		var v []Value
		for x := a; x <= b; x++ {
			v = append(v, Number(x))
		}
		return v
	}
	cases := []struct {
		query  string
		keys   map[string][]Value
		source []DomainSource
		domain [][]Value
	}{
		{example, nil, []DomainSource{FromCategories, FromCategories},
			[][]Value{{String("north"), String("south"), String("east"), String("west")}, {String("f"), String("m")}}},
		{"SELECT floor(age / 10) AS band, COUNT(*) FROM people GROUP BY band", nil,
			[]DomainSource{FromBounds}, [][]Value{nums(0, 12)}},
		{"SELECT floor(age / -50) AS band, COUNT(*) FROM people GROUP BY band", nil,
			[]DomainSource{FromBounds}, [][]Value{nums(-3, 0)}},
		{"SELECT floor(age) AS a, COUNT(*) FROM people GROUP BY a", nil,
			[]DomainSource{FromBounds}, [][]Value{nums(0, 120)}},
		{"SELECT CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' END AS g, COUNT(*) FROM people GROUP BY g", nil,
			[]DomainSource{FromCase}, [][]Value{{String("minor"), String("adult"), {}}}},
		{"SELECT city, COUNT(*) FROM people GROUP BY city", nil,
			[]DomainSource{PartitionSelection}, [][]Value{nil}},
		{"SELECT income, COUNT(*) FROM people GROUP BY income", nil,
			[]DomainSource{PartitionSelection}, [][]Value{nil}},
		{"SELECT city, COUNT(*) FROM people GROUP BY city", map[string][]Value{"city": {String("Oslo"), String("Rome")}},
			[]DomainSource{FromCaller}, [][]Value{{String("Oslo"), String("Rome")}}},
		{"SELECT floor(hours / 10) AS h, region, COUNT(*) FROM people GROUP BY h, region", nil,
			[]DomainSource{PartitionSelection, FromCategories}, [][]Value{nil, {String("north"), String("south"), String("east"), String("west")}}},
		{"SELECT age + 1 AS a1, COUNT(*) FROM people GROUP BY a1", map[string][]Value{"a1": {Number(1), Number(2)}},
			[]DomainSource{FromCaller}, [][]Value{{Number(1), Number(2)}}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			p, err := plan(t, c.query, Options{Keys: c.keys})
			if err != nil {
				t.Fatal(err)
			}
			var src []DomainSource
			var dom [][]Value
			sel := false
			for _, k := range p.Keys {
				src, dom = append(src, k.Source), append(dom, k.Domain)
				sel = sel || k.Source == PartitionSelection
			}
			if !reflect.DeepEqual(src, c.source) || !reflect.DeepEqual(dom, c.domain) {
				t.Errorf("got %v %v, want %v %v", src, dom, c.source, c.domain)
			}
			if p.PartitionSelection() != sel {
				t.Errorf("PartitionSelection() = %v", !sel)
			}
		})
	}
	// The caller's keys are checked against the key's type and name.
	bad := []struct {
		keys map[string][]Value
		want string
	}{
		{map[string][]Value{"city": {Number(1)}}, "numeric value"},
		{map[string][]Value{"town": {String("Oslo")}}, "no GROUP BY key"},
		{map[string][]Value{"city": {String("Oslo"), String("Oslo")}}, "twice"},
		{map[string][]Value{"city": {}}, "between 1 and"},
	}
	for _, b := range bad {
		_, err := plan(t, "SELECT city, COUNT(*) FROM people GROUP BY city", Options{Keys: b.keys})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("keys %v: got %v, want an error saying %q", b.keys, err, b.want)
		}
	}
}

// TestErrorText checks that an Error prints its construct and position.
func TestErrorText(t *testing.T) {
	t.Parallel()
	_, err := plan(t, "SELECT COUNT(*) FROM people WHERE born < now()", Options{})
	if got := fmt.Sprint(err); !strings.Contains(got, "now()") || !strings.Contains(got, "offset 41") {
		t.Errorf("got %q", got)
	}
}

// TestPlanBound checks the contribution bounds: on user-level data 1..the
// number of groups (1..MaxUserGroups under partition selection) and
// 1..MaxUserRows; on row-level data only 1 (or unset); unset bounds plan
// no Bound.
func TestPlanBound(t *testing.T) {
	t.Parallel()
	rowLevel := people
	rowLevel.Unit = ""
	cases := []struct {
		query  string
		schema Schema
		opt    Options
		want   *Bound // nil with hint "": no bound
		hint   string // a refusal's message holds it
	}{
		{example, people, Options{MaxGroups: 8, MaxRows: 3}, &Bound{Unit: "user", Groups: 8, Rows: 3}, ""},
		{example, people, Options{MaxGroups: 1, MaxRows: MaxUserRows}, &Bound{Unit: "user", Groups: 1, Rows: MaxUserRows}, ""},
		{example, people, Options{}, nil, ""},
		{example, people, Options{MaxGroups: 9, MaxRows: 1}, nil, "from 1 to 8"}, // 4 regions × 2 sexes
		{example, people, Options{MaxGroups: 0, MaxRows: 1}, nil, "max_groups must be"},
		{example, people, Options{MaxGroups: 1, MaxRows: 0}, nil, "max_rows must be"},
		{example, people, Options{MaxGroups: 1, MaxRows: MaxUserRows + 1}, nil, "from 1 to 1000"},
		{example, people, Options{MaxGroups: -1, MaxRows: -1}, nil, "max_groups must be"},
		{"SELECT COUNT(*), SUM(income), AVG(age, 18, 90) AS a, VARIANCE(age, -1.5, 1e6) AS v, STDDEV(hours, 0, 80) AS sd, COUNT(DISTINCT user) FROM people", people, Options{MaxGroups: 2, MaxRows: 1}, nil, "from 1 to 1,"},
		{"SELECT city, COUNT(*) FROM people GROUP BY city", people, Options{MaxGroups: MaxUserGroups, MaxRows: 1}, &Bound{Unit: "user", Groups: MaxUserGroups, Rows: 1}, ""},
		{"SELECT city, COUNT(*) FROM people GROUP BY city", people, Options{MaxGroups: MaxUserGroups + 1, MaxRows: 1}, nil, "partition selection"},
		{example, rowLevel, Options{MaxGroups: 1, MaxRows: 1}, nil, ""},
		{example, rowLevel, Options{MaxGroups: 2, MaxRows: 1}, nil, "row-level"},
		{example, rowLevel, Options{MaxGroups: 1, MaxRows: 2}, nil, "row-level"},
	}
	for _, c := range cases {
		q, err := Parse(ast(t, c.query))
		if err != nil {
			t.Fatal(err)
		}
		p, err := q.Plan(c.schema, c.opt)
		if c.hint != "" {
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, c.hint) {
				t.Errorf("%s %+v: got %v, want a refusal saying %q", c.query, c.opt, err, c.hint)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %+v: %v", c.query, c.opt, err)
			continue
		}
		if (p.Bound == nil) != (c.want == nil) || p.Bound != nil && *p.Bound != *c.want {
			t.Errorf("%s %+v: bound %+v, want %+v", c.query, c.opt, p.Bound, c.want)
		}
	}
}
