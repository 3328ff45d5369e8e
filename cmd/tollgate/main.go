// Command tollgate is the self-hosted API gateway with usage plans: one
// binary holding the admin API (control plane) and the gateway (data plane).
//
//	tollgate serve [--role=admin|gateway|all]   run the servers (migrates first)
//	tollgate migrate up|down N|version          manage the PostgreSQL schema (down asks first)
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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/redis/go-redis/v9"
	"golang.org/x/term"

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
	Steps       int    `arg:"" optional:"" help:"down: how many of the newest migrations to revert."`
	All         bool   `help:"down: revert every migration, dropping every table (configuration, key hashes, the usage ledger, the audit log)."`
	Yes         bool   `help:"down: revert without asking (needed when standard input is not a terminal)."`
	DatabaseURL string `help:"PostgreSQL URL." default:"postgres://postgres@127.0.0.1:5432/tollgate" env:"TOLLGATE_DATABASE_URL"`

	in  io.Reader `kong:"-"` // answers to the confirmation (os.Stdin when nil)
	out io.Writer `kong:"-"` // what it prints (os.Stdout when nil)
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
	tuneGC(os.Getenv)
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
	in, out := m.in, m.out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	switch m.Direction {
	case "up":
		if err := migrations.Up(m.DatabaseURL); err != nil {
			return err
		}
	case "down":
		if err := m.down(in, out); err != nil {
			return err
		}
	}
	v, dirty, err := migrations.Version(m.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "version %d dirty %t\n", v, dirty)
	return nil
}

// errMigrateAborted is a confirmation answered with anything but yes.
var errMigrateAborted = errors.New("migrate down: not confirmed; nothing was changed")

// down reverts Steps migrations, or every one with All, after saying what
// each drops and getting a yes (from --yes or typed on in).
func (m *migrateCmd) down(in io.Reader, out io.Writer) error {
	switch {
	case m.Steps < 0:
		return fmt.Errorf("migrate down: the step count must be positive, got %d", m.Steps)
	case m.Steps == 0 && !m.All:
		return errors.New("migrate down: give how many migrations to revert (tollgate migrate down 1), or --all to revert every one (see tollgate migrate --help)")
	case m.Steps > 0 && m.All:
		return errors.New("migrate down: give a step count or --all, not both")
	}
	plan, err := migrations.DownPlan(m.DatabaseURL, m.Steps)
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		fmt.Fprintln(out, "no migration is applied: nothing to revert")
		return nil
	}
	fmt.Fprintf(out, "Reverting %d migration(s) of %s destroys:\n", len(plan), redactURL(m.DatabaseURL))
	for _, mg := range plan {
		what := "no data (indexes or functions only)"
		if len(mg.Drops) > 0 {
			what = strings.Join(mg.Drops, ", ") + ", with every row"
		}
		fmt.Fprintf(out, "  %06d %s: %s\n", mg.Version, mg.Name, what)
	}
	if !m.Yes {
		if f, ok := in.(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
			return errors.New("migrate down: standard input is not a terminal: add --yes to revert without asking; nothing was changed")
		}
		fmt.Fprint(out, "Type yes to revert: ")
		line, _ := bufio.NewReader(in).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			return errMigrateAborted
		}
	}
	return migrations.Down(m.DatabaseURL, m.Steps)
}

// redactURL is a database URL without its password, to print.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}

// Help is the long help of `tollgate migrate`.
func (m *migrateCmd) Help() string {
	return `up applies every migration this build has (tollgate serve does it on start).

down reverts migrations and DESTROYS DATA: each reverted migration drops the
tables and columns it added, with every row in them. Give how many of the
newest migrations to revert (tollgate migrate down 1), or --all to revert every
one, which drops every table: configuration, API key hashes, the usage ledger
(the basis of billing) and the audit log. down first prints what each step
drops and asks you to type yes; --yes skips the question (needed when
standard input is not a terminal). Back up PostgreSQL first (pg_dump).

version prints the applied version and whether a migration failed half-way.`
}

// Help is the long help of `tollgate serve`: what the flags cannot say.
func (s *serveCmd) Help() string {
	return `Every flag also reads the environment variable shown beside it.

Secrets are read only from the environment, or from a file named by the
same variable with a _FILE suffix:
  TOLLGATE_ADMIN_ACCESS_KEY_ID, TOLLGATE_ADMIN_SECRET_ACCESS_KEY   SigV4 credentials of the admin API
  TOLLGATE_ADMIN_TOKEN                                             bearer token, at least 32 characters
  TOLLGATE_KEY_PEPPER                                              API key hashes become HMAC-SHA-256
  TOLLGATE_SECRETS_KEY                                             at least 32 bytes of text (openssl rand -base64 32): seals
                                                                   certificate keys, SigV4 secrets and rotation answers
  TOLLGATE_WEBHOOK_SECRET                                          signs webhooks (needed with TOLLGATE_WEBHOOK_URL)
Without any admin credential the admin refuses to start unless --insecure-admin
is given (it then listens on 127.0.0.1 only).`
}
