package dataset

import (
	"fmt"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		csv     string
		opts    Options
		columns string
		x       string
		rows    int
		extra   func(*Table) string // returns "" if fine
	}{
		{"header auto-detected", "a,b\n1,2\n3,4\n", Options{}, "[a b]", "[1 2 3 4]", 2, nil},
		{"no header auto-detected", "1,2\n3,4\n", Options{}, "[c1 c2]", "[1 2 3 4]", 2, nil},
		{"sklearn header auto-detected", "2,2,neg,pos\n1,2,0\n3,4,1\n", Options{Columns: []string{"1-2"}}, "[c1 c2]", "[1 2 3 4]", 2, nil},
		{"sklearn header explicit", "2,2,neg,pos\n1,2,0\n3,4,1\n", Options{Header: "sklearn"}, "[c1 c2]", "[1 2 3 4]", 2, func(tb *Table) string {
			if tb.ClassColumn != "c3" || fmt.Sprint(tb.ClassNames) != "[neg pos]" {
				return fmt.Sprintf("class column %q names %q", tb.ClassColumn, tb.ClassNames)
			}
			return ""
		}},
		{"sklearn class column kept by --columns", "2,2,neg,pos\n1,2,0\n3,4,1\n", Options{Header: "sklearn", Columns: []string{"1-3"}}, "[c1 c2 c3]", "[1 2 0 3 4 1]", 2, func(tb *Table) string {
			if tb.ClassColumn != "" {
				return fmt.Sprintf("class column %q with --columns", tb.ClassColumn)
			}
			return ""
		}},
		{"sklearn without a class column", "2,2,neg,pos\n1,2\n3,4\n", Options{}, "[c1 c2]", "[1 2 3 4]", 2, func(tb *Table) string {
			if tb.ClassColumn != "" || tb.Header != "sklearn" {
				return fmt.Sprintf("class column %q header %q", tb.ClassColumn, tb.Header)
			}
			return ""
		}},
		{"header yes with numeric names", "1,2\n3,4\n", Options{Header: "yes"}, "[1 2]", "[3 4]", 1, nil},
		{"header no keeps the first line", "1,2\n3,4\n", Options{Header: "no"}, "[c1 c2]", "[1 2 3 4]", 2, nil},
		{"columns by name, position and range", "a,b,c,d\n1,2,3,4\n", Options{Columns: []string{"d", "1", "2-3"}}, "[d a b c]", "[4 1 2 3]", 1, nil},
		{"blank lines and spaces", "a, b\n\n1, 2\n 3,4\n\n", Options{}, "[a b]", "[1 2 3 4]", 2, nil},
		{"scientific notation", "a\n1e3\n-2.5E-1\n", Options{}, "[a]", "[1000 -0.25]", 2, nil},
		{"drop bad rows", "a,b\n1,2\nx,3\n4,NaN\n5\n6,7\n", Options{BadRows: "drop"}, "[a b]", "[1 2 6 7]", 2, func(tb *Table) string {
			if tb.Dropped != 3 || len(tb.DropReason) != 3 || !strings.Contains(tb.DropReason[0], "line 3") || !strings.Contains(tb.DropReason[2], "has 1 fields, expected 2") {
				return fmt.Sprintf("dropped %d: %q", tb.Dropped, tb.DropReason)
			}
			return ""
		}},
		{"user unit", "uid,x\nbob,1\nann,2\nbob,3\n", Options{Unit: "user:uid"}, "[x]", "[1 2 3]", 3, func(tb *Table) string {
			if fmt.Sprint(tb.Users) != "[0 1 0]" || tb.NumUsers != 2 || tb.UserColumn != "uid" {
				return fmt.Sprintf("users %v (%d) column %q", tb.Users, tb.NumUsers, tb.UserColumn)
			}
			return ""
		}},
		{"label", "x,y\n1,10\n2,20\n", Options{Label: "y"}, "[x]", "[1 2]", 2, func(tb *Table) string {
			if fmt.Sprint(tb.Y) != "[10 20]" {
				return fmt.Sprint("labels ", tb.Y)
			}
			return ""
		}},
		{"public mean", "x,y\n1,10\n3,20\n", Options{Center: "public-mean", Mean: []float64{1, 10}}, "[x y]", "[0 0 2 10]", 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := Read(strings.NewReader(tc.csv), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(tb.Columns) != tc.columns || fmt.Sprint(tb.X) != tc.x || tb.Rows != tc.rows {
				t.Errorf("got columns %v x %v rows %d; want %s %s %d", tb.Columns, tb.X, tb.Rows, tc.columns, tc.x, tc.rows)
			}
			if tc.extra != nil {
				if msg := tc.extra(tb); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, csv string
		opts      Options
		want      string
	}{
		{"empty", "", Options{}, "the file has no rows"},
		{"header only", "a,b\n", Options{Header: "yes"}, "has a header but no data rows"},
		{"non-number", "a,b\n1,2\n3,x\n", Options{}, `line 3: column b: "x" is not a number; fix the file, or register with --bad-rows drop`},
		{"NaN", "a,b\n1,NaN\n", Options{}, `line 2: column b: "NaN" is not finite`},
		{"Inf", "a,b\n1,-Inf\n", Options{}, `line 2: column b: "-Inf" is not finite`},
		{"empty value", "a,b\n1,\n", Options{}, "line 2: column b: empty value"},
		{"ragged row", "a,b\n1,2\n3,4,5\n", Options{}, "line 3: has 3 fields, expected 2"},
		{"bad quoting", "a,b\n1,\"2\n", Options{}, "malformed CSV"},
		{"ambiguous first line", "a,b,c\n1,2\n", Options{}, "cannot tell whether line 1 (3 fields; line 2 has 2) is a header: register with --header yes, no or sklearn"},
		{"sklearn count mismatch", "3,2,neg,pos\n1,2,0\n3,4,1\n", Options{}, "line 1 (sklearn header) says 3 samples but the file has 2 data rows"},
		{"sklearn feature mismatch", "2,5,neg,pos\n1,2,0\n3,4,1\n", Options{Header: "sklearn"}, "says 5 features but line 2 has 3 fields"},
		{"duplicate header", "a,a\n1,2\n", Options{}, `column name "a" appears twice`},
		{"empty header name", "a,\n1,2\n", Options{Header: "yes"}, "column 2 has an empty name"},
		{"unknown column", "a,b\n1,2\n", Options{Columns: []string{"z"}}, `--columns "z": no such column; columns are a, b (or 1-based positions 1-2)`},
		{"bad range", "a,b\n1,2\n", Options{Columns: []string{"1-5"}}, "a range is FIRST-LAST with 1 <= FIRST <= LAST <= 2"},
		{"column twice", "a,b\n1,2\n", Options{Columns: []string{"a", "1"}}, "a selected twice"},
		{"user column as feature", "u,b\n1,2\n", Options{Unit: "user:u", Columns: []string{"u", "b"}}, "u is the user or label column"},
		{"unknown user column", "u,b\n1,2\n", Options{Unit: "user:v"}, `--unit user: "v": no such column`},
		{"bad unit", "a\n1\n", Options{Unit: "person"}, `--unit "person": use row or user:COLUMN`},
		{"empty user id", "u,b\n,2\n", Options{Unit: "user:u"}, "line 2: user column u is empty"},
		{"bad label value", "x,y\n1,z\n", Options{Label: "y"}, `line 2: label column y: "z" is not a number`},
		{"bad header mode", "a\n1\n", Options{Header: "maybe"}, `--header "maybe": use auto, yes, no or sklearn`},
		{"bad bad-rows mode", "a\n1\n", Options{BadRows: "ignore"}, `--bad-rows "ignore": use reject or drop`},
		{"mean without center", "a\n1\n", Options{Mean: []float64{1}}, "--mean is only for --center public-mean"},
		{"center without mean", "a\n1\n", Options{Center: "public-mean"}, "--center public-mean needs --mean"},
		{"mean of wrong length", "a,b\n1,2\n", Options{Center: "public-mean", Mean: []float64{1}}, "--mean has 1 values but 2 feature columns are selected (a, b)"},
		{"bad center", "a\n1\n", Options{Center: "data-mean"}, `--center "data-mean": use none or public-mean`},
		{"all rows dropped", "a\nx\ny\n", Options{BadRows: "drop", Header: "yes"}, "no valid rows left after dropping 2 bad rows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.csv), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read(%q) = %v, want an error containing %q", tc.csv, err, tc.want)
			}
		})
	}
}

// TestHeaderAndClassColumn: the table says how line 1 was read and flags
// a last column that looks like a class label, for the owner's warning.
func TestHeaderAndClassColumn(t *testing.T) {
	tests := []struct {
		name      string
		csv       string
		opts      Options
		header    string
		sklearnD  int
		lastClass int
	}{
		{"sklearn target is no feature", "4,2,neg,pos\n1.5,2.5,0\n3.5,4.5,1\n5.5,6.5,1\n7.5,8.5,0\n", Options{}, "sklearn", 2, 0},
		{"sklearn target selected as a feature", "4,2,neg,pos\n1.5,2.5,0\n3.5,4.5,1\n5.5,6.5,1\n7.5,8.5,0\n", Options{Columns: []string{"1-3"}}, "sklearn", 2, 2},
		{"target left out by --columns", "4,2,neg,pos\n1.5,2.5,0\n3.5,4.5,1\n5.5,6.5,1\n7.5,8.5,0\n", Options{Columns: []string{"1-2"}}, "sklearn", 2, 0},
		{"target as --label", "x,y,cls\n1.5,2.5,0\n3.5,4.5,1\n5.5,6.5,1\n", Options{Label: "cls"}, "yes", 0, 0},
		{"named header, integer class", "x,y,cls\n1.5,2.5,0\n3.5,4.5,2\n5.5,6.5,1\n7,8,2\n", Options{}, "yes", 0, 3},
		{"no header, real last column", "1.5,2.5\n3.5,4.25\n5.5,6.5\n", Options{}, "no", 0, 0},
		{"integers but many values", "x,n\n0,1\n0,2\n0,3\n0,4\n0,5\n0,6\n0,7\n0,8\n0,9\n0,10\n0,11\n0,12\n", Options{}, "yes", 0, 0},
		{"every row its own value", "x,n\n0,1\n0,2\n", Options{}, "yes", 0, 0},
		{"single column", "n\n0\n1\n0\n", Options{}, "yes", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := Read(strings.NewReader(tc.csv), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tb.Header != tc.header || tb.SklearnFeatures != tc.sklearnD || tb.LastColumnClasses != tc.lastClass {
				t.Errorf("header %q, sklearn features %d, last column classes %d; want %q, %d, %d",
					tb.Header, tb.SklearnFeatures, tb.LastColumnClasses, tc.header, tc.sklearnD, tc.lastClass)
			}
		})
	}
}

// SniffLayout reads line 1 as Read does, from the first two lines only.
func TestSniffLayout(t *testing.T) {
	tests := []struct {
		csv, header string
		want        string // fmt of the layout's fields
	}{
		{"569,30,malignant,benign\n" + strings.Repeat("1,", 30) + "0\ngarbage,that,is,never,read\n", "auto", "sklearn 31 c1 c31 569 30 [malignant benign] c31"},
		{"150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n", "sklearn", "sklearn 5 c1 c5 150 4 [setosa versicolor virginica] c5"},
		{"a,b\n1,2\n", "auto", "yes 2 a b 0 0 [] "},
		{"1,2\n3,4\n", "auto", "no 2 c1 c2 0 0 [] "},
		{"1,2\n3,4\n", "yes", "yes 2 1 2 0 0 [] "},
	}
	for _, tc := range tests {
		l, err := SniffLayout(strings.NewReader(tc.csv), tc.header)
		if err != nil {
			t.Errorf("%q: %v", tc.csv, err)
			continue
		}
		got := fmt.Sprint(l.Header, " ", len(l.Names), " ", l.Names[0], " ", l.Names[len(l.Names)-1], " ", l.Samples, " ", l.Features, " ", l.ClassNames, " ", l.ClassColumn)
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.csv, got, tc.want)
		}
	}
	if _, err := SniffLayout(strings.NewReader("1,2,3\n4,5\n"), "auto"); err == nil || !strings.Contains(err.Error(), "--header") {
		t.Errorf("ambiguous line 1: %v", err)
	}
	names := []string{"c1", "c2", "c3", "c4"}
	if got, err := SelectColumns(names, Options{}, "c4"); err != nil || fmt.Sprint(got) != "[c1 c2 c3]" {
		t.Errorf("default selection without the class column: %v %v", got, err)
	}
	if got, err := SelectColumns(names, Options{Columns: []string{"4", "1-2"}, Unit: "user:c3"}, "c4"); err != nil || fmt.Sprint(got) != "[c4 c1 c2]" {
		t.Errorf("explicit selection: %v %v", got, err)
	}
	if _, err := SelectColumns(names, Options{Columns: []string{"zz"}}, ""); err == nil || !strings.Contains(err.Error(), `--columns "zz": no such column`) {
		t.Errorf("unknown column: %v", err)
	}
}
