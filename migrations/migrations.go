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
	"regexp"
	"sort"
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

// Down reverts the newest steps applied migrations, or every applied one
// when steps is 0 (an empty schema: configuration, key hashes, the usage
// ledger and the audit log are gone). It refuses, changing nothing, when
// fewer than steps are applied. Having nothing to revert is not an error.
func Down(databaseURL string, steps int) error {
	if _, err := DownPlan(databaseURL, steps); err != nil {
		return err
	}
	return run(databaseURL, func(m *migrate.Migrate) error {
		if steps == 0 {
			return m.Down()
		}
		return m.Steps(-steps)
	})
}

// Migration is one embedded migration and what reverting it destroys.
type Migration struct {
	Version uint
	Name    string   // from the file name: usage_ledger
	Drops   []string // tables ("usage_days") and columns ("api_keys.expires_at") its down file drops, with their data
}

var (
	dropTable  = regexp.MustCompile(`(?i)\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)`)
	alterTable = regexp.MustCompile(`(?is)\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)\s([^;]*)`)
	dropColumn = regexp.MustCompile(`(?i)\bDROP\s+COLUMN\s+(?:IF\s+EXISTS\s+)?(\w+)`)
)

// All returns the embedded migrations, oldest first.
func All() []Migration {
	names, _ := fs.Glob(FS, "*.down.sql")
	var out []Migration
	for _, n := range names {
		v, err := strconv.ParseUint(n[:strings.IndexByte(n, '_')], 10, 32)
		if err != nil {
			continue
		}
		mg := Migration{Version: uint(v), Name: strings.TrimSuffix(n[strings.IndexByte(n, '_')+1:], ".down.sql")}
		sql, _ := FS.ReadFile(n)
		for _, m := range dropTable.FindAllSubmatch(sql, -1) {
			mg.Drops = append(mg.Drops, string(m[1]))
		}
		for _, alter := range alterTable.FindAllSubmatch(sql, -1) { // one ALTER TABLE may drop several columns
			for _, m := range dropColumn.FindAllSubmatch(alter[2], -1) {
				mg.Drops = append(mg.Drops, string(alter[1])+"."+string(m[1]))
			}
		}
		out = append(out, mg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// DownPlan returns the migrations Down(databaseURL, steps) would revert,
// newest first, without changing anything. It fails when the schema is
// dirty or fewer than steps migrations are applied.
func DownPlan(databaseURL string, steps int) ([]Migration, error) {
	if steps < 0 {
		return nil, fmt.Errorf("migrations: a negative step count (%d)", steps)
	}
	v, dirty, err := Version(databaseURL)
	if err != nil {
		return nil, err
	}
	if dirty {
		return nil, fmt.Errorf("migrations: version %d is dirty (a migration failed half-way): fix the schema by hand first", v)
	}
	var applied []Migration
	all := All()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Version <= v {
			applied = append(applied, all[i])
		}
	}
	if v > 0 && (len(applied) == 0 || applied[0].Version != v) {
		return nil, fmt.Errorf("migrations: the database is at version %d, which this build does not know (a newer tollgate migrated it): revert it with that version's binary", v)
	}
	if steps == 0 {
		return applied, nil
	}
	if steps > len(applied) {
		return nil, fmt.Errorf("migrations: %d steps asked, but only %d migrations are applied", steps, len(applied))
	}
	return applied[:steps], nil
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
	all := All()
	if len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}
