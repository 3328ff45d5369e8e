// Command tollgate is the self-hosted API gateway with usage plans: one
// binary holding the admin API (control plane) and the gateway (data plane).
//
//	tollgate serve [--role=admin|gateway|all]   run the servers (migrates first)
//	tollgate migrate up|down|version            manage the PostgreSQL schema
//	tollgate usage export --plan=ID --start --end  a plan's usage from the ledger, CSV or JSON
//	tollgate credentials create|list|rotate|revoke  admin credentials with roles (admin API)
//	tollgate config dump|plan|apply                 the whole configuration as a file (admin API)
//	tollgate keys rotate KEYID --overlap=10m        a new key value; the old one works for the overlap
//	tollgate version                            the version of this build
//
// Every flag has an environment variable of the same name (TOLLGATE_…);
// see `tollgate serve --help` and README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/redis/go-redis/v9"

	"tollgate/migrations"
)

// cli is the command line: main only parses it, handles signals and turns
// errors into exit codes.
type cli struct {
	Serve       serveCmd       `cmd:"" help:"Run the admin API and/or the gateway."`
	Migrate     migrateCmd     `cmd:"" help:"Run the embedded PostgreSQL migrations."`
	Usage       usageCmd       `cmd:"" help:"Read the usage ledger."`
	Credentials credentialsCmd `cmd:"" help:"Manage admin credentials and their roles (through the admin API)."`
	Keys        keysCmd        `cmd:"" help:"Manage API keys through the admin API (rotate)."`
	Config      configCmd      `cmd:"" help:"Dump, plan and apply the whole configuration as a file (through the admin API)."`
	Version     versionCmd     `cmd:"" help:"Print the version of this build."`
}

type serveCmd struct {
	Config
}

type migrateCmd struct {
	Direction   string `arg:"" enum:"up,down,version" help:"up, down or version."`
	DatabaseURL string `help:"PostgreSQL URL." default:"postgres://postgres@127.0.0.1:5432/tollgate" env:"TOLLGATE_DATABASE_URL"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c cli
	kctx := kong.Parse(&c, kong.Name("tollgate"),
		kong.Description("Self-hosted API gateway with usage plans, API keys, throttles, quotas and a stage cache."),
		kong.BindTo(ctx, (*context.Context)(nil)))
	if err := kctx.Run(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		if !errors.As(err, new(loggedError)) {
			fmt.Fprintln(os.Stderr, "tollgate:", err)
		}
		os.Exit(1)
	}
}

// Run starts tollgate and blocks until ctx is cancelled (SIGINT/SIGTERM),
// then drains in-flight requests and closes everything. Every line it
// writes goes through the node's logger (go-redis's too); a signal during
// start is a clean shutdown, a failure is logged and returned as a
// loggedError.
func (s *serveCmd) Run(ctx context.Context) error {
	secrets, err := LoadSecrets(os.Getenv)
	if err != nil {
		return err
	}
	s.Config.Secrets = secrets
	m := NewMain(s.Config)
	defer m.logs.Flush()
	redis.SetLogger(newRedisLogger(m.Logger)) // go-redis writes plain text to stderr otherwise
	if err := m.Run(ctx); err != nil && ctx.Err() == nil {
		m.Logger.Error("start failed", "err", err.Error())
		_ = m.Close()
		return loggedError{err}
	}
	<-ctx.Done()
	m.Logger.Info("shutting down: no new connections; waiting for in-flight requests",
		"cause", context.Cause(ctx).Error(), "timeout", s.Config.ShutdownTimeout.String())
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown incomplete", "err", err.Error())
		return loggedError{err}
	}
	m.Logger.Info("stopped")
	return nil
}

// loggedError is a failure the command has logged already: main exits 1
// without printing it again (the log may be JSON).
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }

// Run applies the migration direction and prints the resulting version.
func (m *migrateCmd) Run() error {
	switch m.Direction {
	case "up":
		if err := migrations.Up(m.DatabaseURL); err != nil {
			return err
		}
	case "down":
		if err := migrations.Down(m.DatabaseURL); err != nil {
			return err
		}
	}
	v, dirty, err := migrations.Version(m.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Printf("version %d dirty %t\n", v, dirty)
	return nil
}

// Help is the long help of `tollgate serve`: what the flags cannot say.
func (s *serveCmd) Help() string {
	return `Every flag also reads the environment variable shown beside it.

Secrets are read only from the environment, or from a file named by the
same variable with a _FILE suffix:
  TOLLGATE_ADMIN_ACCESS_KEY_ID, TOLLGATE_ADMIN_SECRET_ACCESS_KEY   SigV4 credentials of the admin API
  TOLLGATE_ADMIN_TOKEN                                             bearer token, at least 32 characters
  TOLLGATE_KEY_PEPPER                                              API key hashes become HMAC-SHA-256
  TOLLGATE_SECRETS_KEY                                             32 bytes (hex or base64): seals stored SigV4 secrets
  TOLLGATE_WEBHOOK_SECRET                                          signs webhooks (needed with TOLLGATE_WEBHOOK_URL)
Without any admin credential the admin refuses to start unless --insecure-admin
is given (it then listens on 127.0.0.1 only).`
}
