// Package migrations embeds tollgate's PostgreSQL schema as golang-migrate
// files (NNNNNN_name.up.sql / .down.sql) and runs them through
// golang-migrate's iofs source and pgx/v5 database driver. `tollgate
// migrate up|down|version` and the test helper plans/postgres/postgrestest
// both use it, so tests run against exactly the production schema.
package migrations

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// scheme
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// FS holds the migration files, at the root of the file system.
//
//go:embed *.sql
var FS embed.FS

// Up applies every migration not yet applied to the database at
// databaseURL (postgres://, postgresql:// or pgx5://). Being up to date
// already is not an error.
func Up(databaseURL string) error {
	return run(databaseURL, func(m *migrate.Migrate) error { return m.Up() })
}

// Down reverts every applied migration, leaving an empty schema. Having
// nothing to revert is not an error.
func Down(databaseURL string) error {
	return run(databaseURL, func(m *migrate.Migrate) error { return m.Down() })
}

// Version returns the version of the last applied migration (0 when none
// is) and whether that migration failed half-way (dirty: fix the schema by
// hand, then force the version with the migrate CLI).
func Version(databaseURL string) (version uint, dirty bool, err error) {
	err = run(databaseURL, func(m *migrate.Migrate) error {
		version, dirty, err = m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			return nil
		}
		return err
	})
	return version, dirty, err
}

// DriverURL rewrites a postgres:// or postgresql:// URL to the pgx5://
// scheme golang-migrate's pgx/v5 driver registers; other URLs are returned
// unchanged.
func DriverURL(databaseURL string) string {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if rest, ok := strings.CutPrefix(databaseURL, scheme); ok {
			return "pgx5://" + rest
		}
	}
	return databaseURL
}

func run(databaseURL string, fn func(*migrate.Migrate) error) error {
	src, err := iofs.New(FS, ".")
	if err != nil {
		return fmt.Errorf("migrations: open embedded files: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, DriverURL(databaseURL))
	if err != nil {
		return fmt.Errorf("migrations: connect: %w", err)
	}
	err = fn(m)
	srcErr, dbErr := m.Close()
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return errors.Join(srcErr, dbErr)
}

// Latest returns the version of the newest embedded migration (the number
// its file names start with), which Up brings a database to.
func Latest() uint {
	var latest uint
	names, _ := fs.Glob(FS, "*.up.sql")
	for _, n := range names {
		v, err := strconv.ParseUint(n[:strings.IndexByte(n, '_')], 10, 32)
		if err == nil {
			latest = max(latest, uint(v))
		}
	}
	return latest
}
