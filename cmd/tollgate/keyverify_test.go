package main

import (
	"context"
	"testing"

	"tollgate/internal/redistest"
	"tollgate/keyspace"
	"tollgate/plans"
	"tollgate/push"
)

// BenchmarkKeyVerifierByMismatchPosition times the gateway's key verification
// (plans.HashKey of the presented value, then push.Reader.Lookup by the
// digest: local cache, memory of unknown hashes, Redis) for wrong keys that
// differ from a valid 40-character key at its first and at its last
// character. The value is never compared with a stored value: only its
// SHA-256 digest is looked up, so the two means should match (run with
// -benchtime=1000000x).
func BenchmarkKeyVerifierByMismatchPosition(b *testing.B) {
	c, prefix := redistest.MustClient(b)
	r := push.NewReader(c, push.ReaderOptions{Prefix: prefix})
	if err := c.Set(context.Background(), keyspace.Space{Prefix: prefix}.Version(), 1, 0).Err(); err != nil { // config is published
		b.Fatal(err)
	}
	valid := "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789wxyz"
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		pos  int
	}{{"differs at 0", 0}, {"differs at 39", 39}} {
		wrong := []byte(valid)
		wrong[bc.pos] = 'Q'
		candidate := string(wrong)
		if _, err := r.Lookup(ctx, plans.HashKey(candidate, nil)); err != nil {
			b.Fatalf("warm lookup: %v", err)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if rec, _ := r.Lookup(ctx, plans.HashKey(candidate, nil)); rec != nil {
					b.Fatal("a wrong key was found")
				}
			}
		})
	}
}
