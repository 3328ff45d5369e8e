// Package web embeds tollgate's operator console: static pages the admin
// serves under /console/ that call the admin API with a bearer token and
// list APIs, stages, usage plans and API keys.
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
