// Package postgrestest gives each test its own PostgreSQL database, created
// from a template database that holds the migrated schema. The server is
// the one at TOLLGATE_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the user
// must be allowed to create databases. A missing server fails the test; it
// never skips.
//
// The template is built once per test binary (sync.Once) under a
// PostgreSQL advisory lock, because several test binaries run in parallel;
// its name embeds a hash of the migration files, so a changed schema gets a
// new template. Each test then runs CREATE DATABASE ... TEMPLATE, which is
// fast, and drops its database at cleanup.
package postgrestest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tollgate/migrations"
	"tollgate/plans/postgres"
)

// BaseURL returns the URL of the maintenance database tests connect to in
// order to create their own.
func BaseURL() string {
	if u := os.Getenv("TOLLGATE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// advisoryLockKey serialises template builds across test binaries.
const advisoryLockKey = 7_310_482_113

var (
	tplOnce sync.Once
	tplName string
	tplErr  error
)

// MustURL returns the URL of a fresh database holding the migrated schema
// (and no data), dropped at cleanup. It fails tb when PostgreSQL does not
// answer or the migrations fail.
func MustURL(tb testing.TB) string {
	tb.Helper()
	tplOnce.Do(func() { tplName, tplErr = ensureTemplate() })
	if tplErr != nil {
		tb.Fatalf("postgrestest: template database: %v", tplErr)
	}
	name := "tgtest_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := retryInUse(ctx, func() error {
		return exec(ctx, BaseURL(), `CREATE DATABASE `+name+` TEMPLATE `+tplName)
	})
	if err != nil {
		tb.Fatalf("postgrestest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := exec(ctx, BaseURL(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			tb.Errorf("postgrestest: drop database %s: %v", name, err)
		}
	})
	u, err := databaseURL(BaseURL(), name)
	if err != nil {
		tb.Fatalf("postgrestest: %v", err)
	}
	return u
}

// MustDB opens a *postgres.DB on a fresh database (see MustURL) with the
// default options, closed at cleanup.
func MustDB(tb testing.TB) *postgres.DB {
	tb.Helper()
	return MustDBWith(tb, postgres.Options{})
}

// MustDBWith is MustDB with options (a fixed clock, an account default).
func MustDBWith(tb testing.TB, opts postgres.Options) *postgres.DB {
	tb.Helper()
	return MustOpen(tb, MustURL(tb), opts)
}

// MustOpen opens a *postgres.DB on the database at url (from MustURL),
// closed at cleanup; tests that also read tables directly (MustConn) use
// it.
func MustOpen(tb testing.TB, url string, opts postgres.Options) *postgres.DB {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, url, opts)
	if err != nil {
		tb.Fatalf("postgrestest: open: %v", err)
	}
	tb.Cleanup(db.Close)
	return db
}

// ensureTemplate builds the template database for the current migrations
// unless it exists, and returns its name. It builds under another name and
// renames at the end, so a crashed build never leaves a half-migrated
// template behind.
func ensureTemplate() (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "tgtpl_" + sum
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, advisoryLockKey); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, advisoryLockKey)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil || exists {
		return name, err
	}
	return name, build(ctx, conn, name)
}

func build(ctx context.Context, conn *pgx.Conn, name string) error {
	tmp := name + "_build"
	for _, q := range []string{`DROP DATABASE IF EXISTS ` + tmp + ` WITH (FORCE)`, `CREATE DATABASE ` + tmp} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return err
		}
	}
	u, err := databaseURL(BaseURL(), tmp)
	if err != nil {
		return err
	}
	if err := migrations.Up(u); err != nil {
		return err
	}
	// The migrator's backend may still be exiting; RENAME needs it gone.
	return retryInUse(ctx, func() error {
		_, err := conn.Exec(ctx, `ALTER DATABASE `+tmp+` RENAME TO `+name)
		return err
	})
}

// retryInUse runs fn until it does not fail with object_in_use
// (object_in_use: another session is connected to a database that must
// have none) or ctx ends.
func retryInUse(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != pgerrcode.ObjectInUse {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// databaseURL returns base (a postgres:// URL) naming database db instead.
func databaseURL(base, db string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", base, err)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// migrationsHash is the first 12 hex characters of the SHA-256 of every
// migration file's name and content.
func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

func exec(ctx context.Context, dbURL, q string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MustConn opens a plain connection to the database at url (from MustURL),
// closed at cleanup, for tests that look into tables directly.
func MustConn(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("postgrestest: connect: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
