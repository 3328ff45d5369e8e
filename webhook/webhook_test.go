package webhook_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"tollgate/plans"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/webhook"
	"tollgate/webhook/webhooktest"
)

var secret = []byte("whsec-test-0123456789")

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"ev1"}`)
	sig := webhook.Sign(secret, at, body)
	if !strings.HasPrefix(sig, "t=1800000000,v1=") || len(sig) != len("t=1800000000,v1=")+64 {
		t.Fatalf("Sign: got %q, want t=1800000000,v1=<64 hex digits>", sig)
	}
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"as sent", sig, body, at.Add(time.Minute), nil},
		{"a second signature also present", sig + ",v1=00", body, at, nil},
		{"body changed", sig, []byte(`{"id":"ev2"}`), at, webhook.ErrBadSignature},
		{"other secret", webhook.Sign([]byte("other"), at, body), body, at, webhook.ErrBadSignature},
		{"too old", sig, body, at.Add(6 * time.Minute), webhook.ErrStale},
		{"timestamp changed", strings.Replace(sig, "t=1800000000", "t=1800000001", 1), body, at, webhook.ErrBadSignature},
		{"no signature", "t=1800000000", body, at, webhook.ErrMalformed},
		{"garbage", "hello", body, at, webhook.ErrMalformed},
	}
	for _, c := range cases {
		if err := webhook.Verify(secret, c.header, c.body, c.now, 5*time.Minute); err != c.want {
			t.Errorf("%s: Verify got %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzVerify: any header parses without panic, and what Sign writes
// always verifies.
func FuzzVerify(f *testing.F) {
	f.Add("t=1,v1=ab", []byte("x"), int64(1))
	f.Add(",,=,v1", []byte{}, int64(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, sec int64) {
		at := time.Unix(sec%(1<<40), 0)
		_ = webhook.Verify(secret, header, body, at, time.Minute)
		if err := webhook.Verify(secret, webhook.Sign(secret, at, body), body, at, time.Minute); err != nil {
			t.Fatalf("a signature Sign wrote does not verify: %v", err)
		}
	})
}

func TestBackoffDoublesToAnHour(t *testing.T) {
	for try, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 4: 40 * time.Second, 11: time.Hour, 100: time.Hour} {
		if got := webhook.Backoff(try); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", try, got, want)
		}
	}
}

// An event is retried until the receiver answers 2xx, with the same id and
// a valid signature on every try, and delivered once: two dispatchers
// draining one outbox do not both send it, and a duplicate enqueue is
// dropped.
func TestOutboxDeliversOnceAfterFailures(t *testing.T) {
	t.Parallel()
	db := postgrestest.MustDB(t)
	rc := webhooktest.MustReceiver(t, secret, 2)
	ctx := context.Background()
	w := plans.NewKeyExpiring(time.Now(), "key0000001", "partner", "", time.Now().Add(time.Hour))
	for range 2 {
		if err := db.EnqueueWebhook(ctx, w, "test:once"); err != nil {
			t.Fatal(err)
		}
	}
	now := func(int) time.Duration { return 0 } // due again at once
	ds := []*webhook.Dispatcher{
		webhook.New(db, webhook.Options{URL: rc.URL, Secret: secret, Backoff: now}),
		webhook.New(db, webhook.Options{URL: rc.URL, Secret: secret, Backoff: now}),
	}
	var wg sync.WaitGroup
	for range 3 {
		for _, d := range ds {
			wg.Go(func() {
				if _, err := d.DeliverDue(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	accepted, sigErr := rc.Events(nil)
	if rc.Tries() != 3 || len(accepted) != 1 || sigErr != nil {
		t.Fatalf("got %d tries, %d accepted, signature error %v; want 3 tries (2 refused), 1 accepted, valid signatures", rc.Tries(), len(accepted), sigErr)
	}
	got := accepted[0]
	if got["id"] != w.ID || got["type"] != "key.expiring" || got["keyId"] != "key0000001" || got["customerId"] != nil {
		t.Fatalf("got body %v, want id %s, type key.expiring, keyId key0000001, customerId null", got, w.ID)
	}
}
