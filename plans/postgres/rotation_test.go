package postgres_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

// rotate rotates key id to a fresh value with overlap and token ("" for
// none); it returns the rotation and the new value.
func rotate(t *testing.T, db *postgres.DB, id string, overlap time.Duration, token string) (plans.KeyRotation, string) {
	t.Helper()
	v := plans.NewKeyValue()
	rot := plans.KeyRotation{KeyID: id, NewHash: plans.HashKey(v, nil), Overlap: overlap, SealedValue: "sealed:" + v}
	if token != "" {
		rot.TokenHash = plans.RotationTokenHash(token)
	}
	got, err := db.RotateApiKey(ctx, rot)
	must(t, err)
	return got, v
}

// A rotation gives the key a new hash and keeps the old one working until
// the overlap ends: both records carry the key's id and plans, the old
// one its end; the change names both, and later changes of the key name
// the old value too, until the key is deleted.
func TestRotationKeepsThePreviousValueUntilItsEnd(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	plan := newPlan(t, db, "p", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	k, oldHash := newKey(t, db, "rotating")
	_, err := db.CreateUsagePlanKey(ctx, plan.ID, k.ID)
	must(t, err)
	rot, value := rotate(t, db, k.ID, 10*time.Minute, "")
	newHash := plans.HashKey(value, nil)
	if rot.Replayed || rot.PreviousValueExpiresAt.IsZero() || rot.PreviousValueExpiresAt.Nanosecond() != 0 {
		t.Fatalf("got %+v, want a fresh rotation ending at a whole second", rot)
	}
	ch := lastChange(t, db)
	if want := []string{newHash, oldHash}; !sameSet(ch.KeyHashes, want) {
		t.Errorf("change names %v, want %v", ch.KeyHashes, want)
	}
	recs, err := db.KeyRecords(ctx, []string{oldHash, newHash})
	must(t, err)
	o, n := recs[oldHash], recs[newHash]
	if o == nil || n == nil || o.KeyID != k.ID || n.KeyID != k.ID || !slices.Equal(o.PlanIDs, []string{plan.ID}) || !slices.Equal(n.PlanIDs, o.PlanIDs) {
		t.Fatalf("records old %+v new %+v, want both of key %s in plan %s", o, n, k.ID, plan.ID)
	}
	if !o.ValueExpiresAt.Equal(rot.PreviousValueExpiresAt) || !n.ValueExpiresAt.IsZero() {
		t.Fatalf("value ends: old %v new %v, want %v and none", o.ValueExpiresAt, n.ValueExpiresAt, rot.PreviousValueExpiresAt)
	}
	all := map[string]bool{}
	must(t, db.AllKeyRecords(ctx, func(h string, _ *plans.KeyRecord) error { all[h] = true; return nil }))
	if !all[oldHash] || !all[newHash] {
		t.Errorf("AllKeyRecords has %v, want both values", all)
	}
	_, err = db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error { k.Enabled = false; return nil })
	must(t, err)
	if ch := lastChange(t, db); !sameSet(ch.KeyHashes, []string{newHash, oldHash}) {
		t.Errorf("disabling names %v, want both values", ch.KeyHashes)
	}
	must(t, db.DeleteUsagePlanKey(ctx, plan.ID, k.ID))
	if ch := lastChange(t, db); !sameSet(ch.KeyHashes, []string{newHash, oldHash}) {
		t.Errorf("leaving the plan names %v, want both values", ch.KeyHashes)
	}
	must(t, db.DeleteApiKey(ctx, k.ID))
	if ch := lastChange(t, db); !sameSet(ch.KeyHashes, []string{newHash, oldHash}) {
		t.Errorf("deleting names %v, want both values", ch.KeyHashes)
	}
	if recs, _ := db.KeyRecords(ctx, []string{oldHash, newHash}); len(recs) != 0 {
		t.Errorf("after deletion: records %v, want none", recs)
	}
}

// A value held by a previous value cannot be taken by another key, and
// an overlap of 0 leaves no previous value.
func TestPreviousValuesStayUnique(t *testing.T) {
	db := newDB(t)
	old := plans.NewKeyValue()
	rotated := &plans.ApiKey{Name: "b"}
	must(t, db.CreateApiKey(ctx, rotated, plans.HashKey(old, nil)))
	rotate(t, db, rotated.ID, time.Hour, "")
	wantMsg(t, db.CreateApiKey(ctx, &plans.ApiKey{Name: "c"}, plans.HashKey(old, nil)), plans.KindConflict, "API Key already exists")
	k, _ := newKey(t, db, "a")
	_, err := db.RotateApiKey(ctx, plans.KeyRotation{KeyID: k.ID, NewHash: plans.HashKey(old, nil)})
	wantMsg(t, err, plans.KindConflict, "API Key already exists")

	_, hash := newKey(t, db, "d")
	d := lastKeyID(t, db, hash)
	rotate(t, db, d, 0, "")
	if recs, _ := db.KeyRecords(ctx, []string{hash}); len(recs) != 0 {
		t.Errorf("overlap 0: the old value still has a record %v", recs)
	}
}

// The same token on the same key returns the first rotation and changes
// nothing, also when many calls race; another key's token is its own.
func TestRotationTokenReplaysAndMintsOnce(t *testing.T) {
	db := newDB(t)
	k, _ := newKey(t, db, "k")
	first, value := rotate(t, db, k.ID, time.Minute, "tok-1")
	v := version(t, db)
	again, _ := rotate(t, db, k.ID, time.Hour, "tok-1")
	if !again.Replayed || again.SealedValue != "sealed:"+value || !again.PreviousValueExpiresAt.Equal(first.PreviousValueExpiresAt) {
		t.Fatalf("repeat: got %+v, want the first rotation replayed (%+v)", again, first)
	}
	if version(t, db) != v {
		t.Fatalf("a replayed rotation wrote a config change")
	}
	if recs, _ := db.KeyRecords(ctx, []string{plans.HashKey(value, nil)}); recs[plans.HashKey(value, nil)] == nil {
		t.Fatalf("the first rotation's value is not the key's")
	}

	race, _ := newKey(t, db, "race")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fresh []plans.KeyRotation
	for range 8 {
		wg.Go(func() {
			nv := plans.NewKeyValue()
			got, err := db.RotateApiKey(ctx, plans.KeyRotation{KeyID: race.ID, NewHash: plans.HashKey(nv, nil),
				Overlap: time.Minute, TokenHash: plans.RotationTokenHash("tok-race"), SealedValue: "sealed:" + nv})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !got.Replayed {
				fresh = append(fresh, got)
			}
		})
	}
	wg.Wait()
	if len(fresh) != 1 {
		t.Fatalf("8 concurrent calls with one token minted %d values, want 1", len(fresh))
	}
	cur := keyHash(t, db, race.ID)
	if cur != fresh[0].NewHash {
		t.Errorf("the key's hash is %s, want the one minted %s", cur, fresh[0].NewHash)
	}
}

// Rotation answers are replayed for a day, then the token mints again;
// previous values are forgotten a day after their overlap ended, with a
// change naming them (their records become tombstones).
func TestPruneKeyRotations(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(t0)
	db := postgrestest.MustDBWith(t, postgres.Options{Now: clock.Now})
	k, oldHash := newKey(t, db, "k")
	first, _ := rotate(t, db, k.ID, time.Hour, "tok")
	prune := func(want int64) {
		t.Helper()
		n, err := db.PruneKeyRotations(ctx)
		must(t, err)
		if n != want {
			t.Fatalf("pruned %d rows, want %d", n, want)
		}
	}
	clock.Add(plans.RotationReplayWindow - time.Second)
	prune(0)
	if again, _ := rotate(t, db, k.ID, time.Hour, "tok"); !again.Replayed {
		t.Fatalf("within the window: got a fresh rotation, want a replay")
	}
	clock.Add(2 * time.Second)
	prune(1) // the token's answer; the previous value ended 23 h ago
	clock.Add(time.Hour)
	prune(1) // the previous value, a day after its end
	if ch := lastChange(t, db); !sameSet(ch.KeyHashes, []string{oldHash}) {
		t.Errorf("pruning names %v, want the old value %s", ch.KeyHashes, oldHash)
	}
	if again, _ := rotate(t, db, k.ID, time.Hour, "tok"); again.Replayed || again.NewHash == first.NewHash {
		t.Fatalf("after the window: got %+v, want a fresh rotation", again)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// keyHash returns the current hash of key id, from its record.
func keyHash(t *testing.T, db *postgres.DB, id string) string {
	t.Helper()
	var hash string
	must(t, db.AllKeyRecords(ctx, func(h string, r *plans.KeyRecord) error {
		if r.KeyID == id && r.ValueExpiresAt.IsZero() {
			hash = h
		}
		return nil
	}))
	return hash
}

// lastKeyID returns the id of the key whose current hash is hash.
func lastKeyID(t *testing.T, db *postgres.DB, hash string) string {
	t.Helper()
	recs, err := db.KeyRecords(ctx, []string{hash})
	must(t, err)
	return recs[hash].KeyID
}
