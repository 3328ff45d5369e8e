// Command echo is a small upstream for demos and tests: it answers every
// request with a JSON description of what it received (method, path, query,
// headers, body size) and its own hit count, also sent as X-Upstream-Hits.
//
// Query parameters steer it, for fault tests: status=N answers with that
// status, delay=DURATION sleeps first (Go duration syntax, e.g. 150ms),
// size=N pads the body to at least N bytes, and header=Name:Value (repeatable)
// adds response headers.
//
//	echo [-addr 127.0.0.1:8080]
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"tollgate/cmd/echo/echoserver"
)

func main() {
	addr := flag.String("addr", envOr("ECHO_ADDR", "127.0.0.1:8080"), "listen address (env ECHO_ADDR)")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: echoserver.New(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	slog.Info("echo upstream listening", "addr", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("echo upstream failed", "err", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
