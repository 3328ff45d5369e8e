package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"

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
	waitFor(t, "a signed key.expiring webhook", 10*time.Second, func() bool {
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
	waitFor(t, "the access log names reason expired", 5*time.Second, func() bool {
		return strings.Count(logs.String(), "reason=expired") >= 2
	})

	s.setKeyExpiry(t, keyID, time.Now().Add(time.Hour)) // moved later: the key works again
	took := s.waitStatus(t, api.id, "/prod/items", key, 200, 5*time.Second)
	s.setKeyExpiry(t, keyID, time.Now().Add(-time.Minute)) // set in the past: refused
	took = max(took, s.waitStatus(t, api.id, "/prod/items", key, 403, 5*time.Second))
	t.Logf("an expiry changed on an existing key reached both nodes within %v", took)
}
