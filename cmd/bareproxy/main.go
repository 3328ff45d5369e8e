// Command bareproxy is the benchmark's ceiling (make bench,
// docs/benchmarks.md): the fastest bare Go reverse proxy we could build, with
// pooled copy buffers and a tuned transport (package
// internal/benchproxy), no access log. With -fixed it is instead the
// bench's upstream: a fixed 200-byte answer to every request.
//
//	bareproxy -addr 127.0.0.1:8081 -upstream http://127.0.0.1:8080 [-conns 1024]
//	bareproxy -addr 127.0.0.1:8080 -fixed
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"tollgate/internal/benchproxy"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:8080", "upstream URL (scheme and host)")
	conns := flag.Int("conns", 1024, "concurrent requests to keep upstream connections for (MaxIdleConnsPerHost is at least this)")
	fixed := flag.Bool("fixed", false, "serve a fixed 200-byte answer instead of proxying (the bench's upstream)")
	flag.Parse()
	var h http.Handler = benchproxy.Fixed()
	if !*fixed {
		u, err := url.Parse(*upstream)
		if err != nil || u.Host == "" {
			fmt.Fprintf(os.Stderr, "bareproxy: -upstream %q: want http://host:port\n", *upstream)
			os.Exit(2)
		}
		h = benchproxy.New(u, *conns)
	}
	if err := benchproxy.Serve(*addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}
