package postgres_test

import (
	"tollgate/admin"
	"tollgate/plans/postgres"
)

// *postgres.DB is the admin's store.
var _ admin.Store = (*postgres.DB)(nil)
