package postgres_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"tollgate/plans"
	"tollgate/plans/postgres/postgrestest"
)

// A name within the 1024 characters docs/behaviour.md allows but past an index row's byte
// limit (4-byte characters) is bad input: 400, never 500.
func TestLongMultibyteNameIsInvalid(t *testing.T) {
	t.Parallel()
	db := postgrestest.MustDB(t)
	// Random characters, so PostgreSQL cannot compress the value under the limit.
	var name strings.Builder
	for range plans.MaxNameLen {
		name.WriteRune(rune(0x1F300 + rand.IntN(0x300)))
	}
	k := &plans.ApiKey{Name: name.String(), Enabled: true}
	if err := k.Validate(); err != nil {
		t.Fatalf("Validate: %v (the name is within the character limit)", err)
	}
	err := db.CreateApiKey(context.Background(), k, plans.HashKey(plans.NewKeyValue(), nil))
	if plans.ErrorKind(err) != plans.KindInvalid {
		t.Fatalf("CreateApiKey with a 4096-byte name: got %v (kind %v), want an invalid-input error", err, plans.ErrorKind(err))
	}
}
