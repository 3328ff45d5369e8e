package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

	"tollgate/internal/waittest"
	"tollgate/webhook/webhooktest"
)

// setKeyExpiry sets a key's expiry with the AWS SDK's tag-resource.
func (s *stack) setKeyExpiry(t *testing.T, keyID string, at time.Time) {
	t.Helper()
	_, err := s.sdk.TagResource(context.Background(), &apigateway.TagResourceInput{
		ResourceArn: aws.String("arn:aws:apigateway:us-east-1::/apikeys/" + keyID),
		Tags:        map[string]string{"tollgate:expires-at": at.UTC().Format(time.RFC3339Nano)}})
	must(t, "TagResource tollgate:expires-at", err)
}

// A key expires on every node at its time, refused with 403 and reason
// expired (not "unknown"), without any push at that moment; an expiry set
// or moved on an existing key reaches every node within the push bound;
// a key.expiring webhook, signed, is sent before.
func TestKeyExpiresOnEveryNode(t *testing.T) {
	t.Parallel()
	hooks := webhooktest.MustReceiver(t, testWebhookSecret, 0)
	logs := &logBuffer{}
	s := mustStackWith(t, stackOptions{logs: logs, webhookURL: hooks.URL, keyScanEvery: 50 * time.Millisecond})
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(100, 100)})
	keyID, key := s.mustKey(t, plan)
	s.sync(t)
	s.waitStatus(t, api.id, "/prod/items", key, 200, 5*time.Second)

	expiry := time.Now().Add(3 * time.Second).Truncate(time.Microsecond)
	_, err := s.sdk.UpdateApiKey(context.Background(), &apigateway.UpdateApiKeyInput{ApiKey: &keyID,
		PatchOperations: []types.PatchOperation{{Op: types.OpReplace, Path: aws.String("/expiresAt"), Value: aws.String(expiry.UTC().Format(time.RFC3339Nano))}}})
	must(t, "UpdateApiKey /expiresAt", err)
	waittest.Until(t, "a signed key.expiring webhook", 10*time.Second, func() bool {
		evs, _ := hooks.Events(map[string]any{"type": "key.expiring", "keyId": keyID})
		return len(evs) > 0
	})
	evs, sigErr := hooks.Events(map[string]any{"type": "key.expiring", "keyId": keyID})
	if sigErr != nil || len(evs) != 1 || evs[0]["expiresAt"] != expiry.UTC().Format(time.RFC3339Nano) {
		t.Fatalf("webhooks %v (signature error %v), want one key.expiring with expiresAt %s", evs, sigErr, expiry.UTC().Format(time.RFC3339Nano))
	}
	if time.Now().Before(expiry.Add(-time.Second)) {
		for i := range 2 {
			if res := s.call(t, i, api.id, "/prod/items", key); res.StatusCode != 200 {
				t.Fatalf("before its expiry, gateway %d: got %d, want 200", i, res.StatusCode)
			}
		}
	}
	time.Sleep(time.Until(expiry)) // the expiry is a moment, not an event to wait on
	for i := range 2 {
		res := s.call(t, i, api.id, "/prod/items", key)
		if res.StatusCode != 403 {
			t.Fatalf("after its expiry, gateway %d: got %d, want 403 at once (the record carries the time)", i, res.StatusCode)
		}
		checkHeader(t, i, res, "x-amzn-ErrorType", "ForbiddenException")
	}
	waittest.Until(t, "the access log names reason expired", 5*time.Second, func() bool {
		return strings.Count(logs.String(), "reason=expired") >= 2
	})

	s.setKeyExpiry(t, keyID, time.Now().Add(time.Hour)) // moved later: the key works again
	took := s.waitStatus(t, api.id, "/prod/items", key, 200, 5*time.Second)
	s.setKeyExpiry(t, keyID, time.Now().Add(-time.Minute)) // set in the past: refused
	took = max(took, s.waitStatus(t, api.id, "/prod/items", key, 403, 5*time.Second))
	t.Logf("an expiry changed on an existing key reached both nodes within %v", took)
}

// rotateCLI runs `tollgate keys rotate` against the stack's admin with its
// bearer token and returns what it printed.
func (s *stack) rotateCLI(t *testing.T, keyID string, overlap time.Duration, token string) map[string]string {
	t.Helper()
	var out bytes.Buffer
	cmd := keysRotateCmd{adminFlags: adminFlags{AdminURL: "http://" + s.admin.AdminAddr}, Key: keyID, Overlap: overlap,
		Token: token, Tries: 3, out: &out, pause: 10 * time.Millisecond,
		getenv: func(name string) string {
			if name == "TOLLGATE_ADMIN_TOKEN" {
				return s.admin.Config.Secrets.AdminToken
			}
			return ""
		}}
	must(t, "tollgate keys rotate", cmd.Run(context.Background()))
	var got map[string]string
	must(t, "decode its output", json.Unmarshal(out.Bytes(), &got))
	return got
}

// remaining returns X-RateLimit-Remaining of one admitted call through
// gateway i.
func (s *stack) remaining(t *testing.T, i int, apiID, key string) int {
	t.Helper()
	res := s.call(t, i, apiID, "/prod/items", key)
	if res.StatusCode != 200 {
		t.Fatalf("gateway %d: got %d, want 200", i, res.StatusCode)
	}
	n, err := strconv.Atoi(res.Header.Get("X-RateLimit-Remaining"))
	must(t, "X-RateLimit-Remaining", err)
	return n
}

// A key rotated with a 10-minute overlap (`tollgate keys rotate`): both
// values work on both nodes and count against the one key's quota; the
// same token answers the same value and mints nothing; once the overlap
// ends on Redis's clock, every node refuses the old value (reason rotated)
// and serves the new one.
func TestKeyRotationWithOverlapOnTwoNodes(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	s := mustStackWith(t, stackOptions{logs: logs, adminToken: "rotation-test-admin-token-0123456789abcdef"})
	api := s.mustCaseAPI(t)
	plan := s.mustPlan(t, api.id, planSpec{Throttle: throttle(100, 100), Quota: quota(1000, types.QuotaPeriodTypeDay, 0)})
	keyID, old := s.mustKey(t, plan)
	s.sync(t)
	s.waitStatus(t, api.id, "/prod/items", old, 200, 5*time.Second)

	got := s.rotateCLI(t, keyID, 10*time.Minute, "rotation-token-1")
	fresh, ends := got["value"], got["previousValueExpiresAt"]
	end, err := time.Parse(time.RFC3339, ends)
	if got["id"] != keyID || fresh == "" || fresh == old || err != nil || end.Before(time.Now().Add(9*time.Minute)) {
		t.Fatalf("rotate printed %v, want the key's id, a new value and an end about 10 minutes away", got)
	}
	s.waitStatus(t, api.id, "/prod/items", fresh, 200, 5*time.Second)
	prev := s.remaining(t, 0, api.id, old)
	for i, v := range []string{fresh, old, fresh} { // one quota, whichever value
		if n := s.remaining(t, i%2, api.id, v); n != prev-1 {
			t.Fatalf("call %d: remaining %d, want %d (both values count against the one key)", i, n, prev-1)
		}
		prev--
	}
	if again := s.rotateCLI(t, keyID, time.Minute, "rotation-token-1"); again["value"] != fresh || again["previousValueExpiresAt"] != ends {
		t.Fatalf("retried with the same token: got %v, want the same answer %v", again, got)
	}
	for i := range 2 {
		for _, v := range []string{old, fresh} {
			if res := s.call(t, i, api.id, "/prod/items", v); res.StatusCode != 200 {
				t.Fatalf("after the retry, gateway %d: a value got %d, want 200 (no third value minted)", i, res.StatusCode)
			}
		}
	}

	s.useClock(t, end.Add(2*time.Second)) // Redis's clock past the overlap
	took := s.waitStatus(t, api.id, "/prod/items", old, 403, 5*time.Second)
	t.Logf("the old value was refused on both nodes %v after the overlap ended on the limiter's clock", took)
	for i := range 2 {
		if res := s.call(t, i, api.id, "/prod/items", fresh); res.StatusCode != 200 {
			t.Fatalf("new value after the overlap, gateway %d: got %d, want 200", i, res.StatusCode)
		}
	}
	waittest.Until(t, "the access log names reason rotated", 5*time.Second, func() bool {
		return strings.Contains(logs.String(), "reason=rotated")
	})
}
