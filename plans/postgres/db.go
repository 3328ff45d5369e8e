package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tollgate/plans"
)

// Options configure a DB. The zero value is the default.
type Options struct {
	// Now is the clock; default time.Now. Called once per transaction.
	Now func() time.Time
	// AccountDefault seeds the account throttle when the database has
	// none yet (first start); the zero value means
	// plans.DefaultAccountThrottle (10000 requests/s, burst 5000). Once
	// set, the stored value (changed by UpdateAccount) is authoritative.
	AccountDefault plans.Throttle
	// ConnectTimeout bounds opening one connection (TCP, TLS, startup and
	// authentication); 0 means DefaultConnectTimeout. A connect_timeout in
	// the URL wins.
	ConnectTimeout time.Duration
	// StatementTimeout bounds one store operation (one transaction): its
	// context gets this deadline unless it has an earlier one, and the
	// server's statement_timeout is set to it (unless the URL sets one).
	// A server that accepts connections but never answers then costs a
	// caller at most this long, and a KindUnavailable error. 0 means
	// DefaultStatementTimeout; AllKeyRecords, a bulk read, is exempt.
	StatementTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 10 * time.Second
)

// DB is the PostgreSQL store. It is safe for concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	timeout time.Duration // Options.StatementTimeout
}

// Open connects to the database at url (a postgres:// URL or key=value
// DSN, as pgxpool.ParseConfig accepts), checks that it answers and seeds
// the account throttle if it is not yet set (that first write is config
// version 1). The schema must be migrated already (package migrations).
// Errors: KindUnavailable when the database does not answer.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	timeout := cmp.Or(opts.StatementTimeout, DefaultStatementTimeout)
	applyTimeouts(cfg, cmp.Or(opts.ConnectTimeout, DefaultConnectTimeout), timeout)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", translate(err))
	}
	db := &DB{pool: pool, now: opts.Now, timeout: timeout}
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	acct := opts.AccountDefault
	if acct == (plans.Throttle{}) {
		acct = plans.DefaultAccountThrottle
	}
	if err := db.seedAccount(ctx, acct); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes every connection of the pool; it waits for connections in
// use to be returned.
func (db *DB) Close() { db.pool.Close() }

// applyTimeouts sets the connect timeout and the server's statement
// timeout on cfg where its URL did not.
func applyTimeouts(cfg *pgxpool.Config, connect, statement time.Duration) {
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connect
	}
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(statement.Milliseconds(), 10)
	}
}

// Ping checks that the database answers, within the statement timeout.
// Errors: KindUnavailable.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	return translate(db.pool.Ping(ctx))
}

// bound gives ctx the statement timeout unless it has an earlier deadline.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= db.timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.timeout)
}

// txFunc is the body of one transaction; now is the transaction's clock
// reading (UTC, microsecond precision, as PostgreSQL stores it).
type txFunc func(ctx context.Context, tx pgx.Tx, now time.Time) error

// write runs fn in a READ COMMITTED read-write transaction, within the
// statement timeout. The audit entry ctx carries (plans.WithAudit) is
// recorded in the same transaction (audited).
func (db *DB) write(ctx context.Context, fn txFunc) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	err := db.inTx(ctx, pgx.TxOptions{}, audited(fn))
	markRecorded(ctx, err)
	return err
}

// writeBulk runs fn as write does, within bound instead of the statement
// timeout, on the client and the server: a bulk write (ImportApiKeys)
// takes longer than one entity's write may. An earlier deadline of ctx
// still applies.
func (db *DB) writeBulk(ctx context.Context, bound time.Duration, fn txFunc) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := db.inTx(ctx, pgx.TxOptions{}, audited(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(bound.Milliseconds(), 10)); err != nil {
			return err
		}
		return fn(ctx, tx, now)
	}))
	markRecorded(ctx, err)
	return err
}

// readOnly are the options of read transactions: REPEATABLE READ, so every
// query of one sees the same committed state.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// read runs fn in a read-only transaction (readOnly), within the statement
// timeout.
func (db *DB) read(ctx context.Context, fn txFunc) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	return db.inTx(ctx, readOnly, fn)
}

// readBulk runs fn in a read-only transaction without the statement
// timeout, on the client or the server: a bulk read (every key record) is
// bounded by its caller's context.
func (db *DB) readBulk(ctx context.Context, fn txFunc) error {
	return db.inTx(ctx, readOnly, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return err
		}
		return fn(ctx, tx, now)
	})
}

// maxAttempts bounds the retries of a transaction that failed with a
// serialization failure or deadlock (both safe to run again).
const maxAttempts = 3

func (db *DB) inTx(ctx context.Context, opts pgx.TxOptions, fn txFunc) error {
	if shared, ok := ctx.Value(sharedTxKey{}).(*sharedTx); ok {
		// Inside Atomically: a savepoint of the shared transaction, so a
		// failed call undoes only its own statements.
		return translate(pgx.BeginFunc(ctx, shared.tx, func(sp pgx.Tx) error {
			return fn(ctx, sp, shared.now)
		}))
	}
	var err error
	for range maxAttempts {
		now := db.now().UTC().Truncate(time.Microsecond)
		err = pgx.BeginTxFunc(ctx, db.pool, opts, func(tx pgx.Tx) error {
			return fn(ctx, tx, now)
		})
		if !retryable(err) {
			break
		}
	}
	return translate(err)
}

type sharedTxKey struct{}

// sharedTx is the transaction of an Atomically call and its clock reading.
type sharedTx struct {
	tx  pgx.Tx
	now time.Time
}

// Atomically runs fn in one transaction: every store call made with the
// context fn receives joins it (as a savepoint), so fn's reads and writes
// commit together or not at all (tollgate config apply). The transaction
// first locks the config version row, so no other write commits between
// fn's reads and its writes. bound limits the whole transaction (the
// statement timeout too). An audit entry in ctx is recorded once.
func (db *DB) Atomically(ctx context.Context, bound time.Duration, fn func(ctx context.Context) error) error {
	return db.writeBulk(ctx, bound, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := tx.Exec(ctx, `SELECT version FROM config_version FOR UPDATE`); err != nil {
			return err
		}
		return fn(context.WithValue(ctx, sharedTxKey{}, &sharedTx{tx: tx, now: now}))
	})
}

// Consistently runs fn in one read-only REPEATABLE READ transaction that
// every store call made with fn's context joins, so fn sees one committed
// state throughout and locks nothing (tollgate config dump and plan).
// bound limits the whole transaction.
func (db *DB) Consistently(ctx context.Context, bound time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	return db.inTx(ctx, readOnly, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(bound.Milliseconds(), 10)); err != nil {
			return err
		}
		return fn(context.WithValue(ctx, sharedTxKey{}, &sharedTx{tx: tx, now: now}))
	})
}

func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && retryableCode(pg.Code)
}

// retryableCode reports whether a transaction that failed with SQLSTATE
// code may succeed when run again.
func retryableCode(code string) bool {
	return code == pgerrcode.SerializationFailure || code == pgerrcode.DeadlockDetected
}

// seedAccount inserts the account row unless it exists, as config change
// with snapshot=true (the account throttle is part of the snapshot).
func (db *DB) seedAccount(ctx context.Context, t plans.Throttle) error {
	if err := t.Validate("accountDefault"); err != nil {
		return err
	}
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, `INSERT INTO account (id, rate_limit, burst_limit, updated_at)
			VALUES (true, $1, $2, $3) ON CONFLICT (id) DO NOTHING`, t.RateLimit, t.BurstLimit, now)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return record(ctx, tx, now, &change{snapshot: true})
	})
}
