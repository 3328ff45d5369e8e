// Package web embeds tollgate's operator console: a static page and plain
// ES modules that the admin serves under /console/ (with a strict
// Content-Security-Policy). The console calls the admin API with the
// operator's bearer token and reads the node's /metrics; it has no server
// side of its own. Its chart library, uPlot, is vendored from npm under
// static/vendor/ by `make web-vendor` (web/package.json pins the version),
// so building tollgate never needs Node. docs/console.md describes it.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the console's files, rooted at the directory that holds
// index.html.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	return sub
}
