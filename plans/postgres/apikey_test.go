package postgres_test

import (
	"strings"
	"testing"
	"time"

	"tollgate/plans"
)

func TestApiKeyLifecycle(t *testing.T) {
	db := newDB(t)
	k := &plans.ApiKey{Name: "partner", Description: "d", Enabled: true, CustomerID: "c1",
		Value: plans.NewKeyValue(), Tags: map[string]string{plans.InvalidateCacheTag: "true"}}
	hash := plans.HashKey(k.Value, nil)
	must(t, db.CreateApiKey(ctx, k, hash))
	if len(k.ID) != plans.LongIDLen || k.CreatedDate.IsZero() || k.StageKeys == nil {
		t.Errorf("got %+v, want a 10-character id, dates and empty stageKeys", k)
	}
	ch := lastChange(t, db)
	if ch.Snapshot || strings.Join(ch.KeyHashes, ",") != hash {
		t.Errorf("got change %+v, want key %s and no snapshot", ch, hash)
	}
	got, err := db.GetApiKey(ctx, k.ID)
	must(t, err)
	if got.Value != "" || got.Name != "partner" || got.CustomerID != "c1" || !got.Enabled {
		t.Errorf("got %+v, want the stored key without its value", got)
	}
	got, err = db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error {
		k.Enabled, k.Value, k.ID = false, "leak", "hijack"
		return nil
	})
	must(t, err)
	if got.Enabled || got.Value != "" || got.ID != k.ID || !got.LastUpdatedDate.After(k.LastUpdatedDate.Time) {
		t.Errorf("got %+v, want disabled, no value, same id, later lastUpdatedDate", got)
	}
	if ch := lastChange(t, db); strings.Join(ch.KeyHashes, ",") != hash {
		t.Errorf("got change %+v, want key %s", ch, hash)
	}
	must(t, db.DeleteApiKey(ctx, k.ID))
	_, err = db.GetApiKey(ctx, k.ID)
	wantMsg(t, err, plans.KindNotFound, "Invalid API Key identifier specified")
	if ch := lastChange(t, db); strings.Join(ch.KeyHashes, ",") != hash {
		t.Errorf("got change %+v, want key %s", ch, hash)
	}
}

func TestApiKeyErrors(t *testing.T) {
	db := newDB(t)
	k, hash := newKey(t, db, "a")
	wantErr(t, db.CreateApiKey(ctx, &plans.ApiKey{Name: "b"}, hash), plans.KindConflict, "")
	wantErr(t, db.CreateApiKey(ctx, &plans.ApiKey{Name: "b"}, ""), plans.KindInvalid, "value")
	wantErr(t, db.CreateApiKey(ctx, &plans.ApiKey{Name: "", Value: plans.NewKeyValue()}, "x"), plans.KindInvalid, "name")
	wantErr(t, db.CreateApiKey(ctx, &plans.ApiKey{Name: "b", Value: "short"}, "x"), plans.KindInvalid, "value")
	_, err := db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error { k.Name = ""; return nil })
	wantErr(t, err, plans.KindInvalid, "name")
	_, err = db.UpdateApiKey(ctx, "nope", func(*plans.ApiKey) error { return nil })
	wantMsg(t, err, plans.KindNotFound, "Invalid API Key identifier specified")
	wantMsg(t, db.DeleteApiKey(ctx, "nope"), plans.KindNotFound, "Invalid API Key identifier specified")
}

func TestListApiKeys(t *testing.T) {
	db := newDB(t)
	for _, c := range []struct{ name, customer string }{
		{"alpha", "c1"}, {"alpine", "c2"}, {"beta", "c1"}, {"al%x", "c3"},
	} {
		k := &plans.ApiKey{Name: c.name, CustomerID: c.customer, Value: plans.NewKeyValue()}
		must(t, db.CreateApiKey(ctx, k, plans.HashKey(k.Value, nil)))
	}
	cases := []struct {
		name, query, customer string
		want                  []string
	}{
		{"all", "", "", []string{"al%x", "alpha", "alpine", "beta"}},
		{"prefix", "alp", "", []string{"alpha", "alpine"}},
		{"prefix is literal", "al%", "", []string{"al%x"}},
		{"customer", "", "c1", []string{"alpha", "beta"}},
		{"both", "al", "c2", []string{"alpine"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ks, _, err := db.ListApiKeys(ctx, c.query, c.customer, pageAll)
			must(t, err)
			var got []string
			for _, k := range ks {
				got = append(got, k.Name)
			}
			slicesSort(got)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	first, next, err := db.ListApiKeys(ctx, "", "", plans.Page{Limit: 3})
	must(t, err)
	rest, last, err := db.ListApiKeys(ctx, "", "", plans.Page{Limit: 3, Position: next})
	must(t, err)
	if len(first) != 3 || len(rest) != 1 || last != "" || rest[0].ID <= first[2].ID {
		t.Errorf("got pages of %d and %d (position %q), want 3 then 1 in id order", len(first), len(rest), last)
	}
}

// The expiry tag sets the key's expiresAt and its record's ExpiresAt;
// changing or removing the tag follows; a bad value is 400 naming the tag.
func TestKeyExpiryFollowsItsTag(t *testing.T) {
	db := newDB(t)
	k, hash := newKey(t, db, "expiring")
	at := time.Date(2027, 1, 31, 12, 0, 0, 500_000_000, time.UTC)
	got, err := db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error {
		k.Tags = map[string]string{plans.ExpiresAtTag: "2027-01-31T13:00:00.5+01:00"}
		return nil
	})
	must(t, err)
	if got.ExpiresAt == nil || !got.ExpiresAt.Equal(at) || got.ExpiresAt.Location() != time.UTC {
		t.Fatalf("got expiresAt %v, want %v UTC", got.ExpiresAt, at)
	}
	if read, _ := db.GetApiKey(ctx, k.ID); read.ExpiresAt == nil || !read.ExpiresAt.Equal(at) {
		t.Fatalf("read expiresAt %v, want %v", read.ExpiresAt, at)
	}
	recs, err := db.KeyRecords(ctx, []string{hash})
	must(t, err)
	if r := recs[hash]; r == nil || !r.ExpiresAt.Equal(at) || r.Expired(at.Add(-time.Millisecond)) || !r.Expired(at) {
		t.Fatalf("got record %+v, want ExpiresAt %v, expired from then on", r, at)
	}
	_, err = db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error {
		k.Tags = map[string]string{plans.ExpiresAtTag: "next tuesday"}
		return nil
	})
	wantErr(t, err, plans.KindInvalid, "tags."+plans.ExpiresAtTag)
	if !strings.Contains(plans.ErrorMessage(err), plans.ExpiresAtTag) {
		t.Errorf("got %v, want the message to name %s", err, plans.ExpiresAtTag)
	}
	got, err = db.UpdateApiKey(ctx, k.ID, func(k *plans.ApiKey) error { k.Tags = nil; return nil })
	must(t, err)
	recs, _ = db.KeyRecords(ctx, []string{hash})
	if got.ExpiresAt != nil || !recs[hash].ExpiresAt.IsZero() {
		t.Errorf("after removing the tag: expiresAt %v, record %v; want none", got.ExpiresAt, recs[hash].ExpiresAt)
	}
}
