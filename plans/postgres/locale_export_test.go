package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// MessagesLocale is the server message language of the tests that check
// errors are classified by SQLSTATE, constraint name and statement, never
// by the message text, which lc_messages translates.
const MessagesLocale = "de_DE.UTF-8"

// SkipWithoutLocale skips tb when err is PostgreSQL refusing an
// lc_messages locale its host does not have (SQLSTATE 22023, invalid
// parameter value): make test generates it (scripts/services.sh locale),
// make demo does not. Any other error fails tb.
func SkipWithoutLocale(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22023" {
		tb.Skipf("PostgreSQL's host has no %s locale for lc_messages (make test generates it with scripts/services.sh locale): %v", MessagesLocale, err)
	}
	tb.Fatalf("lc_messages = %s: %v", MessagesLocale, err)
}
