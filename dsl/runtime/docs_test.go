package runtime

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/release"
)

const (
	refBegin = "<!-- BEGIN FUNCTION REFERENCE (generated from dsl/catalog.Funcs by dsl/runtime's TestDocsDSL; PRIVNOTES_UPDATE_DOCS=1 rewrites it) -->"
	refEnd   = "<!-- END FUNCTION REFERENCE -->"
)

// reference renders the function reference of docs/dsl.md from
// catalog.Funcs, so that the document cannot drift from the table.
func reference() string {
	var b strings.Builder
	b.WriteString(refBegin + "\n\n")
	for _, f := range catalog.Funcs {
		fmt.Fprintf(&b, "### `%s`\n\n`%s`", f.Name, f.Signature())
		if f.Result != "" {
			fmt.Fprintf(&b, " → `%s`", f.Result)
		}
		fmt.Fprintf(&b, "\n\n%s\n\n", f.Doc)
		if len(f.Positional)+len(f.Keywords) > 0 {
			b.WriteString("| parameter | kind | type | default | meaning |\n| --- | --- | --- | --- | --- |\n")
			for _, p := range f.Positional {
				fmt.Fprintf(&b, "| `%s` | positional | %s | required | %s |\n", p.Name, p.Type, escapeCell(p.Doc))
			}
			for _, p := range f.Keywords {
				def := "required"
				if !p.Required {
					def = "`" + p.Default + "`"
					if p.DefaultDoc != "" {
						def = p.DefaultDoc
					}
				}
				doc := p.Doc
				if len(p.Choices) > 0 {
					var cs []string
					for _, c := range p.Choices {
						if c != "" {
							cs = append(cs, `"`+c+`"`)
						}
					}
					doc += " (one of " + strings.Join(cs, ", ") + ")"
				}
				fmt.Fprintf(&b, "| `%s` | keyword | %s | %s | %s |\n", p.Name, p.Type, escapeCell(def), escapeCell(doc))
			}
			b.WriteString("\n")
		}
		if f.Private {
			b.WriteString("Privacy: charges (eps, delta) to the dataset's budget before reading any data.\n")
		}
		if f.Paper != "" {
			fmt.Fprintf(&b, "Paper: %s.\n", strings.TrimSuffix(f.Paper, "."))
		}
		if f.Releases != "" {
			fmt.Fprintf(&b, "Releases: %s.\n", strings.TrimSuffix(f.Releases, "."))
		}
		b.WriteString("\n")
	}
	b.WriteString(refEnd)
	return b.String()
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

const dslDoc = "../../docs/dsl.md"

func TestDocsDSL(t *testing.T) {
	b, err := os.ReadFile(dslDoc)
	if err != nil {
		t.Fatalf("docs/dsl.md: %v", err)
	}
	doc := string(b)
	i, j := strings.Index(doc, refBegin), strings.Index(doc, refEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/dsl.md lacks the function reference markers")
	}
	want := reference()
	if got := doc[i : j+len(refEnd)]; got != want {
		if os.Getenv("PRIVNOTES_UPDATE_DOCS") == "1" {
			doc = doc[:i] + want + doc[j+len(refEnd):]
			if err := os.WriteFile(dslDoc, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/dsl.md's function reference is out of date with catalog.Funcs: run PRIVNOTES_UPDATE_DOCS=1 go test ./dsl/runtime -run TestDocsDSL")
	}
	// every magic, error name and pca method is documented outside the
	// generated part
	prose := doc[:i] + doc[j:]
	for _, s := range append(magicNames(), NameBudgetExceeded, NameArgumentError, NameDatasetError, NameBudgetBlock,
		NameNotAvailable, NameLedgerError, NameMechanismFailed, NameInterrupted, NameMagicError, NameNoCell) {
		if !strings.Contains(prose, s) {
			t.Errorf("docs/dsl.md does not document %s", s)
		}
	}
	for _, m := range release.PCAMethods() {
		if !strings.Contains(prose, `"`+m+`"`) {
			t.Errorf("docs/dsl.md does not document method %q", m)
		}
	}
}

// docs/threat-model.md lists every escape and leak test of this package.
func TestDocsThreatModel(t *testing.T) {
	b, err := os.ReadFile("../../docs/threat-model.md")
	if err != nil {
		t.Fatalf("docs/threat-model.md: %v", err)
	}
	var src []byte
	for _, f := range []string{"escape_test.go", "leak_test.go", "neighbours_test.go", "blockcap_test.go", "soundness_test.go"} {
		s, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, s...)
	}
	names := regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(src), -1)
	if len(names) < 13 {
		t.Fatalf("found %d escape tests", len(names))
	}
	for _, m := range names {
		if !strings.Contains(string(b), m[1]) {
			t.Errorf("docs/threat-model.md does not list %s", m[1])
		}
	}
}

const (
	importsBegin = "<!-- BEGIN IMPORTS (generated from interp.AllowedImports by dsl/runtime's TestDocsImports; PRIVNOTES_UPDATE_DOCS=1 rewrites it) -->"
	importsEnd   = "<!-- END IMPORTS -->"
)

// TestDocsImports: the importable packages listed in docs/dsl.md are the
// engine's allowlist.
func TestDocsImports(t *testing.T) {
	b, err := os.ReadFile(dslDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, importsBegin), strings.Index(doc, importsEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/dsl.md lacks the import list markers")
	}
	var list []string
	for _, p := range interp.AllowedImports() {
		list = append(list, "`"+p+"`")
	}
	want := importsBegin + "\n" + strings.Join(list, ", ") + "\n" + importsEnd
	if got := doc[i : j+len(importsEnd)]; got != want {
		if os.Getenv("PRIVNOTES_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(dslDoc, []byte(doc[:i]+want+doc[j+len(importsEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/dsl.md's import list is out of date with the allowlist: run PRIVNOTES_UPDATE_DOCS=1 go test ./dsl/runtime -run TestDocsImports")
	}
}
