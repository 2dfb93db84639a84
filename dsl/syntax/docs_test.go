package syntax

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docExample is a piece of DSL code in docs/dsl.md.
type docExample struct {
	line    int
	code    string
	wantErr string // non-empty: the example shows a refused cell, with this message
}

var (
	fenceRe  = regexp.MustCompile("(?ms)^```go[ \t]*\n(.*?)^```")
	expectRe = regexp.MustCompile(`<!-- translate: error "([^"]+)" -->\s*$`)
	// an inline span that is a DSL call, or an assignment of one
	inlineRe = regexp.MustCompile("`((?:\\w+ := )?(?:" + strings.Join(Names(), "|") + `)\((?s:[^` + "`" + `]*)\))` + "`")
)

// docExamples returns the ```go blocks of a Markdown document and its
// inline code spans that are DSL calls (outside the generated function
// reference, whose signatures are not calls). A block meant to fail is
// preceded by the comment <!-- translate: error "message" -->.
func docExamples(doc string) []docExample {
	if i := strings.Index(doc, "<!-- BEGIN FUNCTION REFERENCE"); i >= 0 {
		if j := strings.Index(doc, "<!-- END FUNCTION REFERENCE -->"); j > i {
			doc = doc[:i] + strings.Repeat("\n", strings.Count(doc[i:j], "\n")) + doc[j:]
		}
	}
	var out []docExample
	for _, m := range fenceRe.FindAllStringSubmatchIndex(doc, -1) {
		ex := docExample{line: 1 + strings.Count(doc[:m[0]], "\n"), code: doc[m[2]:m[3]]}
		if e := expectRe.FindStringSubmatch(doc[:m[0]]); e != nil {
			ex.wantErr = e[1]
		}
		out = append(out, ex)
	}
	for _, m := range inlineRe.FindAllStringSubmatchIndex(doc, -1) {
		code := doc[m[2]:m[3]]
		if strings.ContainsAny(code, "…<") {
			continue // elided arguments or a signature: not meant to run
		}
		out = append(out, docExample{line: 1 + strings.Count(doc[:m[0]], "\n"), code: code})
	}
	return out
}

// Every DSL example of docs/dsl.md translates, and those shown as refused
// are refused with the message the document gives.
func TestDocExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/dsl.md")
	if err != nil {
		t.Fatalf("docs/dsl.md: %v", err)
	}
	exs := docExamples(string(b))
	var blocks, refused int
	for _, ex := range exs {
		if strings.Contains(ex.code, "\n") {
			blocks++
		}
		_, err := Translate("dsl.md", ex.code)
		switch {
		case ex.wantErr == "" && err != nil:
			t.Errorf("docs/dsl.md:%d: example does not translate: %v\n%s", ex.line, err, ex.code)
		case ex.wantErr != "" && err == nil:
			t.Errorf("docs/dsl.md:%d: example marked as refused translates\n%s", ex.line, ex.code)
		case ex.wantErr != "":
			refused++
			if !strings.Contains(err.Error(), ex.wantErr) {
				t.Errorf("docs/dsl.md:%d: error %q, the document says %q", ex.line, err, ex.wantErr)
			}
		}
	}
	// the extraction itself: the document has code blocks, inline calls
	// and a refused example (a regexp that matches nothing passes vacuously)
	if blocks < 3 || refused < 1 || len(exs) < 8 {
		t.Errorf("found %d examples (%d multi-line, %d refused) in docs/dsl.md; the extraction is broken", len(exs), blocks, refused)
	}
}

func TestDocExamplesExtraction(t *testing.T) {
	doc := "text `x := private_count(ds, eps=1)` and `private_pca(bc, …)`\n" +
		"<!-- translate: error \"boom\" -->\n```go\nbad(\n```\n```go\nok := 1\n```\n```json\n{}\n```\n" +
		"<!-- BEGIN FUNCTION REFERENCE (x) -->\n`show(x)`\n<!-- END FUNCTION REFERENCE -->\n"
	got := docExamples(doc)
	want := []docExample{{3, "bad(\n", "boom"}, {6, "ok := 1\n", ""}, {1, "x := private_count(ds, eps=1)", ""}}
	if len(got) != len(want) {
		t.Fatalf("docExamples = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("example %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
