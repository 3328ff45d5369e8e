package admin

import (
	"io/fs"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// ConsoleCSP is the Content-Security-Policy of every /console/ response.
// The console is static ES modules, a stylesheet and fetch calls to this
// same origin (the admin API and /metrics), so everything else is
// refused: no inline script or style, no eval, no other origin, no
// framing, no plugin, no form posted anywhere (forms are handled by
// script). Directives as in the W3C CSP Level 3 recommendation.
const ConsoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// consoleRoutes serves the operator console's files (Options.Web) at
// /console/ without authentication: they hold no secret, and every call
// they make to the API carries the operator's bearer token.
func consoleRoutes(r chi.Router, files fs.FS) {
	if files == nil {
		return
	}
	r.Handle("/console/*", consoleHeaders(http.StripPrefix("/console/", http.FileServerFS(files))))
	r.Get("/console", http.RedirectHandler("/console/", http.StatusMovedPermanently).ServeHTTP)
}

// consoleHeaders sets ConsoleCSP and the other browser protections on
// every console response: no MIME sniffing, no Referer (URLs carry no
// secret, but API ids need not leak either), no framing, and revalidation
// so an upgraded node serves its own console at once.
func consoleHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ConsoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
