package web_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"tollgate/web"
)

// walk calls fn with the path and text of every embedded file whose name
// ends in ext.
func walk(t *testing.T, ext string, fn func(name, text string)) {
	t.Helper()
	files := web.FS()
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ext) {
			return err
		}
		b, err := fs.ReadFile(files, p)
		fn(p, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func exists(name string) bool {
	_, err := fs.Stat(web.FS(), name)
	return err == nil
}

var (
	tagRe       = regexp.MustCompile(`(?is)<(script|style|link|img)\b[^>]*>`)
	inlineAttrs = regexp.MustCompile(`(?i)\s(style|on[a-z]+)\s*=`)
	refRe       = regexp.MustCompile(`\b(?:src|href)="([^"#:]+)"`)
)

// TestHTMLWorksUnderTheCSP checks what the Content-Security-Policy
// (script-src 'self'; style-src 'self') would block: inline scripts,
// <style> elements, style attributes and inline event handlers; and that
// every file the pages refer to is embedded.
func TestHTMLWorksUnderTheCSP(t *testing.T) {
	walk(t, ".html", func(name, text string) {
		for _, tag := range tagRe.FindAllStringSubmatch(text, -1) {
			switch {
			case strings.EqualFold(tag[1], "style"):
				t.Errorf("%s: inline <style> element: %s", name, tag[0])
			case strings.EqualFold(tag[1], "script") && !strings.Contains(tag[0], "src="):
				t.Errorf("%s: inline script: %s", name, tag[0])
			}
		}
		if m := inlineAttrs.FindString(text); m != "" {
			t.Errorf("%s: inline style or event handler attribute %q", name, m)
		}
		for _, ref := range refRe.FindAllStringSubmatch(text, -1) {
			if target := path.Join(path.Dir(name), ref[1]); !exists(target) {
				t.Errorf("%s refers to %s, which is not embedded", name, ref[1])
			}
		}
	})
}

var importRe = regexp.MustCompile(`(?m)(?:^import|^export)[^"']*from\s+"([^"]+)"|import\("([^"]+)"\)`)

// TestModulesResolve checks that every relative import of every ES module
// names an embedded file (the browser would fail the whole page).
func TestModulesResolve(t *testing.T) {
	n := 0
	walk(t, ".js", func(name, text string) {
		for _, m := range importRe.FindAllStringSubmatch(text, -1) {
			spec := m[1] + m[2]
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative imports of embedded files work without a bundler", name, spec)
				continue
			}
			n++
			if target := path.Join(path.Dir(name), spec); !exists(target) {
				t.Errorf("%s imports %s, which is not embedded", name, spec)
			}
		}
	})
	if n < 10 {
		t.Errorf("found %d imports; the pattern no longer matches the modules", n)
	}
}

// forbidden are things the console's own scripts never do: the CSP blocks
// eval; HTML from strings invites injection (the console renders API data
// as text); the token lives in sessionStorage only.
var forbidden = []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function", "localStorage", "document.cookie", `setAttribute("style"`}

// TestScriptsKeepTheRules checks the console's own modules (not the
// vendored libraries) for forbidden constructs.
func TestScriptsKeepTheRules(t *testing.T) {
	walk(t, ".js", func(name, text string) {
		if strings.HasPrefix(name, "vendor/") {
			return
		}
		for _, f := range forbidden {
			if strings.Contains(text, f) {
				t.Errorf("%s uses %s", name, f)
			}
		}
	})
}

// TestVendoredUPlotMatchesPackageJSON checks that the vendored uPlot is the
// version web/package.json pins (make web-vendor copies it from npm).
func TestVendoredUPlotMatchesPackageJSON(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	want := pkg.Dependencies["uplot"]
	b, err := fs.ReadFile(web.FS(), "vendor/uplot/uPlot.esm.js")
	if err != nil {
		t.Fatal(err)
	}
	if header := string(b[:min(400, len(b))]); want == "" || !strings.Contains(header, "(v"+want+")") {
		t.Errorf("vendored uPlot header %q, want version %q from package.json: run make web-vendor", header, want)
	}
}

// TestFSHasTheConsole checks the embedded tree's entry points.
func TestFSHasTheConsole(t *testing.T) {
	if err := fstest.TestFS(web.FS(), "index.html", "console.css", "js/main.js", "vendor/uplot/uPlot.esm.js", "vendor/uplot/LICENSE"); err != nil {
		t.Fatal(err)
	}
}
