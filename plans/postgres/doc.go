// Package postgres is tollgate's source of truth: the admin.Store
// implementation on PostgreSQL (pgx/v5 pool), and the reads the push
// publisher needs (ConfigVersion, Changes, Snapshot, KeyRecords,
// AllKeyRecords).
//
// Every public method runs in one transaction and takes "now" from the
// injected clock once. Writes that change what the data plane sees (APIs,
// stages, deployments that stages point to, usage plans, plan keys, API
// keys, the account) validate the resulting config inside the transaction,
// increment the single-row config_version counter and insert one
// config_changes row naming what changed (plans.Change). Resources,
// methods and integrations reach traffic only by deploying, so editing them
// changes no version.
//
// Driver errors are translated once, by type, into *plans.Error (see
// translate): no rows → KindNotFound with AWS's message, unique violation
// → KindConflict, foreign key violation → KindInvalid naming the
// reference, connection failures → KindUnavailable.
//
// The schema lives in package migrations; tests get a fresh migrated
// database from package postgrestest.
package postgres
