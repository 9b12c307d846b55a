// Package docs holds the project's documentation and the tests that keep it true: every link
// resolves inside the clone, the package map matches what the packages import, and the README
// names only endpoints and verdict words the OpenAPI document has. (The README's flags are
// checked against every command's -h by the lab module, which can build them all:
// lab/cmd/lab's TestREADMEFlags.)
package docs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/ingest"
)

// root is the repository's top directory (this package is docs/).
const root = ".."

// trackedFiles lists the files git tracks under root whose names end in one of exts.
func trackedFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		for _, e := range exts {
			if strings.HasSuffix(f, e) {
				files = append(files, f)
				break
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("git tracks no %v files under %s", exts, root)
	}
	return files
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence     = regexp.MustCompile("(?s)```.*?```")
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
)

// anchors are the GitHub anchors of a Markdown file's headings: lowercased, punctuation other
// than - and _ dropped, spaces as -, repeats numbered.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(fence.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && !strings.ContainsRune("—–’“”…→←×≤≥±·", r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestLinksResolveInsideTheClone follows every relative link of every tracked Markdown file: the
// target must exist inside the repository, and an anchor must name a heading of it. No tracked
// text points outside the clone (../shared/…).
func TestLinksResolveInsideTheClone(t *testing.T) {
	top, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range trackedFiles(t, ".md", ".go", ".yaml", ".sh") {
		body, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(body, []byte("shared/design/")) && f != "docs/docs_test.go" {
			t.Errorf("%s names ../shared/design/, outside the clone; the contracts are docs/contracts.md", f)
		}
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		text := fence.ReplaceAllString(string(body), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			abs := filepath.Join(top, filepath.Dir(f), path)
			if path == "" {
				abs = filepath.Join(top, f)
			}
			if rel, err := filepath.Rel(top, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", f, target)
				continue
			}
			st, err := os.Stat(abs)
			if err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
				continue
			}
			if anchor == "" || st.IsDir() || !strings.HasSuffix(abs, ".md") {
				continue
			}
			md, err := os.ReadFile(abs)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(md))[anchor] {
				t.Errorf("%s: link %q: no heading of %s has the anchor #%s", f, target, filepath.Base(abs), anchor)
			}
		}
	}
}

func TestAnchors(t *testing.T) {
	got := anchors("# Observe any workload\n## Start, relists and the inventory: recovering what happened while nobody watched\n### GET /v1/experiments/{name}/runs/{run}/trace.json\n```\n# not a heading\n```\n## Lag\n## Lag\n")
	want := map[string]bool{
		"observe-any-workload": true,
		"start-relists-and-the-inventory-recovering-what-happened-while-nobody-watched": true,
		"get-v1experimentsnamerunsruntracejson":                                         true,
		"lag":                                                                           true,
		"lag-1":                                                                         true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
}

// goList maps each package of the module in dir (relative to root) to the schedlens packages its
// non-test files import, both as paths relative to the main module ("internal/store",
// "lab/stack").
func goList(t *testing.T, dir string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join(root, dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", cmd.Dir, err)
	}
	const mod = "github.com/schedlens/schedlens/"
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var ours []string
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, mod) {
				ours = append(ours, strings.TrimPrefix(imp, mod))
			}
		}
		slices.Sort(ours)
		pkgs[strings.TrimPrefix(fields[0], mod)] = ours
	}
	return pkgs
}

var (
	tableRow = regexp.MustCompile("^\\| `([a-z0-9/_-]+)` \\|.*\\| ([^|]*) \\|$")
	parens   = regexp.MustCompile(`\([^)]*\)`)
)

// TestPackageMap holds docs/architecture.md's package tables to the code: a row for every
// package of both modules and no other, and each row's "may import" exactly the schedlens
// packages that package imports (by the last element of their path, or the path from the main
// module's root where two share it; "any" for the end-to-end tests, "—" for none).
func TestPackageMap(t *testing.T) {
	actual := goList(t, ".")
	for p, imps := range goList(t, "lab") {
		actual[p] = imps
	}
	byName := map[string]string{}
	for p := range actual {
		name := filepath.Base(p)
		if other, dup := byName[name]; dup {
			byName[name] = "" // ambiguous: never named in the table
			t.Logf("%s and %s share the name %q", other, p, name)
			continue
		}
		byName[name] = p
	}

	md, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(md)
	start := strings.Index(section, "\n## Packages\n")
	if start < 0 {
		t.Fatal("docs/architecture.md has no ## Packages section")
	}
	section = section[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		m := tableRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		pkg, cell := m[1], strings.TrimSpace(parens.ReplaceAllString(m[2], ""))
		documented[pkg] = true
		imps, ok := actual[pkg]
		if !ok {
			t.Errorf("docs/architecture.md lists %s, which is no package", pkg)
			continue
		}
		if cell == "any" {
			continue
		}
		var want []string
		if cell != "—" {
			for _, name := range strings.Split(cell, ",") {
				name = strings.TrimSpace(name)
				p := byName[name]
				if _, ok := actual[name]; ok && strings.Contains(name, "/") {
					p = name
				}
				if p == "" {
					t.Errorf("%s: may import %q, which names no single package", pkg, name)
					continue
				}
				want = append(want, p)
			}
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, imps); diff != "" {
			t.Errorf("docs/architecture.md: the imports of %s differ from its row (-row +code):\n%s", pkg, diff)
		}
	}
	for p := range actual {
		if !documented[p] {
			t.Errorf("package %s has no row in docs/architecture.md's package map", p)
		}
	}
}

// openAPI is the api's OpenAPI document.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "internal/api/openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var endpoint = regexp.MustCompile(`/v1/[A-Za-z0-9_.{}/-]*[A-Za-z0-9_.}]`)

// TestREADMEEndpoints: every /v1/ path the README names is a path of the OpenAPI document (its
// parameters may be written as values), and every documented path is named in the README.
func TestREADMEEndpoints(t *testing.T) {
	paths := openAPI(t)["paths"].(map[string]any)
	text := readme(t)
	named := map[string]bool{}
	for _, e := range endpoint.FindAllString(text, -1) {
		named[e] = true
	}
	for e := range named {
		found := false
		for p := range paths {
			if matchPath(p, e) {
				found = true
				break
			}
		}
		if !found && e != ingest.Path {
			t.Errorf("README names %s, which is no path of internal/api/openapi.json (nor the collector's %s)", e, ingest.Path)
		}
	}
	for p := range paths {
		if !strings.HasPrefix(p, "/v1/") {
			continue
		}
		if !named[p] {
			t.Errorf("internal/api/openapi.json has %s, which the README does not name", p)
		}
	}
}

// matchPath reports whether the README's path e is the OpenAPI path p, with p's {parameters}
// matching a parameter or a value of one path segment.
func matchPath(p, e string) bool {
	ps, es := strings.Split(p, "/"), strings.Split(e, "/")
	if len(ps) != len(es) {
		return false
	}
	for i := range ps {
		if ps[i] == es[i] {
			continue
		}
		if !strings.HasPrefix(ps[i], "{") {
			// a parameter inside a segment, such as {run}.json: compare what surrounds it
			open, close := strings.Index(ps[i], "{"), strings.Index(ps[i], "}")
			if open < 0 || close < 0 || !strings.HasPrefix(es[i], ps[i][:open]) || !strings.HasSuffix(es[i], ps[i][close+1:]) {
				return false
			}
			continue
		}
		if !strings.HasSuffix(ps[i], "}") || es[i] == "" {
			return false
		}
	}
	return true
}

// retiredWords are verdict words a contract change replaced; no document may use them.
var retiredWords = []string{"no_difference"}

// TestREADMEVerdictWords: the README lists every verdict an arm and a metric can have, as the
// OpenAPI document enumerates them, and no retired one.
func TestREADMEVerdictWords(t *testing.T) {
	schemas := openAPI(t)["components"].(map[string]any)["schemas"].(map[string]any)
	text := readme(t)
	for _, schema := range []string{"ArmResult", "MetricResult"} {
		s, ok := schemas[schema].(map[string]any)
		if !ok {
			t.Fatalf("openapi.json has no schema %s", schema)
		}
		verdict := s["properties"].(map[string]any)["verdict"].(map[string]any)
		for _, w := range verdict["enum"].([]any) {
			if !strings.Contains(text, "`"+w.(string)+"`") {
				t.Errorf("README does not name %s verdict `%s`", schema, w)
			}
		}
	}
	for _, f := range trackedFiles(t, ".md", ".json", ".html", ".go") {
		if f == "docs/docs_test.go" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range retiredWords {
			if bytes.Contains(b, []byte(w)) {
				t.Errorf("%s uses the retired verdict word %q", f, w)
			}
		}
	}
}
