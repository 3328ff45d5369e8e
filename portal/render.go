package portal

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"tollgate/plans"
)

//go:embed templates/*.html
var templateFiles embed.FS

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"join": strings.Join,
}

// parsePages parses every page template with the layout, by page name
// ("keys" for templates/keys.html).
func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, n))
	}
	return pages
}

// page is what every template gets: the page's title and data, the
// partner when signed in, the forms' CSRF token and which navigation link
// is current.
type page struct {
	Title   string
	Nav     string // "apis", "keys", "usage" or ""
	Account *plans.PortalAccount
	CSRF    string
	Signup  bool // self-service sign-up is on
	Error   string
	Notice  string
	Data    any
}

// render writes the page name with status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if sess := sessionOf(r.Context()); sess != nil {
		p.Account = sess.account
	}
	p.CSRF = s.formToken(w, r)
	p.Signup = s.opts.SignupPlan != ""
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout.html", p); err != nil {
		s.log.Error("portal: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers a page saying why, with status.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.render(w, r, status, "message", page{Title: http.StatusText(status), Error: why})
}

// fail answers an error from a store or a check: 400 with its message for
// bad input, 404 for what the partner may not see, 409 for a conflict,
// 503 when a dependency is down, 500 otherwise (logged).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch plans.ErrorKind(err) {
	case plans.KindInvalid:
		s.refuse(w, r, http.StatusBadRequest, plans.ErrorMessage(err))
	case plans.KindNotFound:
		s.refuse(w, r, http.StatusNotFound, "There is no such page.")
	case plans.KindConflict:
		s.refuse(w, r, http.StatusConflict, plans.ErrorMessage(err))
	case plans.KindUnavailable:
		w.Header().Set("Retry-After", "5")
		s.refuse(w, r, http.StatusServiceUnavailable, "The portal cannot reach its database: try again in a moment.")
	default:
		s.log.Error("portal: internal error", "path", r.URL.Path, "err", err)
		s.refuse(w, r, http.StatusInternalServerError, "Something went wrong on our side.")
	}
}
