package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/plans"
)

const (
	goodKey     = "GoodKey0123456789abcdefXYZ"
	disabledKey = "DisabledKey0123456789abcdef"
	noPlanKey   = "NoPlanKey0123456789abcdefgh"
	unknownKey  = "UnknownKey0123456789abcdefg"
)

// generatedKey is a value of the default generated format (prefix, checksum).
var generatedKey = plans.NewKeyValue()

// keyedSnapshot serves /keyed (API key required) and /open (not), with
// plan01 covering the stage and plan02 covering another API only.
func keyedSnapshot() *plans.Snapshot {
	snap := snapshot(plans.Stage{},
		res{"/keyed", methods(mock(true), "GET")},
		res{"/open", methods(mock(false), "GET")},
	)
	addPlan(snap, plans.UsagePlan{ID: "plan01", Throttle: &plans.Throttle{RateLimit: 100, BurstLimit: 100}})
	addPlan(snap, plans.UsagePlan{ID: "plan02", ApiStages: []plans.ApiStage{{ApiID: "otherapi00", Stage: testStage}}})
	return snap
}

func addTestKeys(f *fakeKeys) {
	f.add(goodKey, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan02", "plan01"}})
	f.add(generatedKey, &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}})
	f.add(disabledKey, &plans.KeyRecord{KeyID: "key0000002", Enabled: false, PlanIDs: []string{"plan01"}})
	f.add(noPlanKey, &plans.KeyRecord{KeyID: "key0000003", Enabled: true, PlanIDs: []string{"plan02"}})
}

// logLine returns the access-log line of the request with id. The line is
// written after the response, so it waits up to a second for it.
func (tg *testGateway) logLine(t *testing.T, id string) map[string]any {
	t.Helper()
	var m map[string]any
	found := func() bool {
		for line := range strings.SplitSeq(tg.logs.String(), "\n") {
			if id == "" || !strings.Contains(line, `"request_id":"`+id+`"`) {
				continue
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			return true
		}
		return false
	}
	if _, ok := waittest.Poll(time.Second, found); !ok {
		t.Fatalf("no access-log line for request %q in:\n%s", id, tg.logs.String())
	}
	return m
}

// redisKeys counts the keys under the gateway's test prefix.
func (tg *testGateway) redisKeys(t *testing.T) int {
	t.Helper()
	rdb, _ := redistest.MustClient(t)
	keys, err := rdb.Keys(t.Context(), tg.prefix+":*").Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	return len(keys)
}

func TestKeyRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header []string
		reason string
		keyID  string
	}{
		{"missing", nil, ReasonMissing, ""},
		{"empty", []string{"x-api-key", "  "}, ReasonMissing, ""},
		{"too short", []string{"x-api-key", "abc123"}, ReasonMalformed, ""},
		{"not alphanumeric", []string{"x-api-key", "GoodKey0123456789-abcdef"}, ReasonMalformed, ""},
		{"too long", []string{"x-api-key", strings.Repeat("a", 129)}, ReasonMalformed, ""},
		{"two headers", []string{"x-api-key", goodKey, "X-API-KEY", goodKey}, ReasonMalformed, ""},
		{"generated shape, bad checksum", []string{"x-api-key", "tg" + strings.Repeat("a", 42)}, ReasonChecksum, ""},
		{"generated shape, one character mistyped", []string{"x-api-key", mistyped(plans.NewKeyValue())}, ReasonChecksum, ""},
		{"unknown", []string{"x-api-key", unknownKey}, ReasonUnknown, ""},
		{"disabled", []string{"x-api-key", disabledKey}, ReasonDisabled, "key0000002"},
		{"no plan for this stage", []string{"x-api-key", noPlanKey}, ReasonNoPlan, "key0000003"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := mustGateway(t, keyedSnapshot(), nil)
			addTestKeys(tg.keys)
			got := tg.do(t, "GET", "/prod/keyed", tc.header...)
			wantError(t, got, 403, "Forbidden", "ForbiddenException")
			if n := tg.engine.calls.Load(); n != 0 {
				t.Errorf("limiter calls: got %d, want 0 (nothing charged)", n)
			}
			if n := tg.keys.lookups.Load(); tc.keyID == "" && tc.reason != ReasonUnknown && n != 0 {
				t.Errorf("key lookups: got %d, want 0 (refused on its face)", n)
			}
			if n := tg.redisKeys(t); n != 0 {
				t.Errorf("redis keys under prefix: got %d, want 0 (nothing charged)", n)
			}
			line := tg.logLine(t, got.header.Get("x-amzn-RequestId"))
			if line["error_type"] != ErrorTypeInvalidKey || line["reason"] != tc.reason {
				t.Errorf("log error_type/reason: got %v/%v, want %s/%s", line["error_type"], line["reason"], ErrorTypeInvalidKey, tc.reason)
			}
			if tc.keyID != "" && line["key_id"] != tc.keyID {
				t.Errorf("log key_id: got %v, want %s", line["key_id"], tc.keyID)
			}
			if strings.Contains(tg.logs.String(), goodKey) || strings.Contains(tg.logs.String(), disabledKey) {
				t.Errorf("log contains a key value")
			}
			if got.header.Get("X-RateLimit-Limit") != "" || got.header.Get("RateLimit") != "" {
				t.Errorf("refusal has rate-limit headers: %v", got.header)
			}
		})
	}
}

// mistyped returns v with its 11th character changed.
func mistyped(v string) string {
	c := byte('a')
	if v[10] == c {
		c = 'b'
	}
	return v[:10] + string(c) + v[11:]
}

func TestKeyAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header []string
	}{
		{"canonical name", []string{"X-Api-Key", goodKey}},
		{"lower case name", []string{"x-api-key", goodKey}},
		{"upper case name", []string{"X-API-KEY", goodKey}},
		{"value trimmed", []string{"x-api-key", "  " + goodKey + "\t"}},
		{"generated value with its checksum", []string{"x-api-key", generatedKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := mustGateway(t, keyedSnapshot(), nil)
			addTestKeys(tg.keys)
			req, _ := http.NewRequest("GET", tg.http.URL+"/prod/keyed", nil)
			req.Host = testHost
			req.Header[tc.header[0]] = []string{tc.header[1]} // verbatim name on the wire
			resp, err := tg.http.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status: got %d, want 200", resp.StatusCode)
			}
			line := tg.logLine(t, resp.Header.Get("x-amzn-RequestId"))
			if line["key_id"] != "key0000001" || line["plan_id"] != "plan01" {
				t.Errorf("log key_id/plan_id: got %v/%v, want key0000001/plan01", line["key_id"], line["plan_id"])
			}
		})
	}
}

func TestKeyNotRequiredIgnoresKey(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, keyedSnapshot(), nil)
	addTestKeys(tg.keys)
	for _, key := range []string{"garbage", goodKey} {
		got := tg.do(t, "GET", "/prod/open", "x-api-key", key)
		if got.status != 200 {
			t.Fatalf("key %q: status got %d, want 200", key, got.status)
		}
		if got.header.Get("X-RateLimit-Limit") != "" {
			t.Errorf("key %q: got X-RateLimit-Limit %q, want none (no plan limits)", key, got.header.Get("X-RateLimit-Limit"))
		}
	}
	if n := tg.keys.lookups.Load(); n != 0 {
		t.Errorf("key lookups: got %d, want 0", n)
	}
}

func TestKeyLookupUnavailable(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, keyedSnapshot(), nil)
	tg.keys.err = plans.Unavailable(errors.New("redis down"), "API key store unavailable")
	got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey)
	wantError(t, got, 503, "Service Unavailable", "ServiceUnavailableException")
	if n := tg.engine.calls.Load(); n != 0 {
		t.Errorf("limiter calls: got %d, want 0", n)
	}
}

func TestFailedKeyAttemptsLimited(t *testing.T) {
	t.Parallel()
	tg := mustGateway(t, keyedSnapshot(), nil)
	addTestKeys(tg.keys)
	otherKey := "OtherGoodKey0123456789abcd"
	tg.keys.add(otherKey, &plans.KeyRecord{KeyID: "key0000004", Enabled: true, PlanIDs: []string{"plan01"}})
	frozen := time.Now()
	tg.attempts = newAttempts(func() time.Time { return frozen }) // no refill during the test
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Fatalf("good key before the failures: got %d, want 200", got.status)
	}
	for i := range int(FailedKeyBurst) {
		if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", unknownKey); got.status != 403 {
			t.Fatalf("attempt %d: status got %d, want 403", i+1, got.status)
		}
	}
	lookups := tg.keys.lookups.Load()
	// A key this node does not hold in memory is not looked up from a
	// blocked address, valid or not.
	for _, key := range []string{unknownKey, otherKey, disabledKey} {
		got := tg.do(t, "GET", "/prod/keyed", "x-api-key", key)
		wantError(t, got, 429, "Too Many Requests", "TooManyRequestsException")
		if got.header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After: got %q, want 1", got.header.Get("Retry-After"))
		}
	}
	// A key the node already holds (used before) still works: a blocked
	// address shared with an attacker does not lock out partners, as on
	// the admin. It costs no lookup either.
	if got := tg.do(t, "GET", "/prod/keyed", "x-api-key", goodKey); got.status != 200 {
		t.Errorf("known good key from a blocked address: got %d, want 200", got.status)
	}
	if n := tg.keys.lookups.Load(); n != lookups {
		t.Errorf("lookups after the limit: got %d more, want 0", n-lookups)
	}
	if n := counterValue(t, tg.metrics.Throttled.WithLabelValues(testAPI, testStage, levelKeyAttempts)); n != 3 {
		t.Errorf("tollgate_throttled_total{level=key_attempts}: got %v, want 3", n)
	}
	if got := tg.do(t, "GET", "/prod/open"); got.status != 200 {
		t.Errorf("unkeyed method from the same client: got %d, want 200", got.status)
	}
}

// TestKeyCheckedUnderThePepper: with a key pepper the gateway looks a key
// up by its HMAC under the pepper, on every request (its hashes are
// reused); the plain hash of the same value finds nothing.
func TestKeyCheckedUnderThePepper(t *testing.T) {
	t.Parallel()
	pepper := []byte("a pepper of the test")
	tg := mustGateway(t, keyedSnapshot(), func(o *Options) { o.KeyPepper = pepper })
	tg.keys.mu.Lock()
	tg.keys.records[plans.HashKey(goodKey, pepper)] = &plans.KeyRecord{KeyID: "key0000001", Enabled: true, PlanIDs: []string{"plan01"}}
	tg.keys.records[plans.HashKey(unknownKey, nil)] = &plans.KeyRecord{KeyID: "key0000009", Enabled: true, PlanIDs: []string{"plan01"}}
	tg.keys.mu.Unlock()
	for i, tc := range []struct {
		key  string
		want int
	}{{goodKey, 200}, {goodKey, 200}, {unknownKey, 403}, {goodKey, 200}} {
		req, _ := http.NewRequest("GET", tg.http.URL+"/prod/keyed", nil)
		req.Host = testHost
		req.Header.Set("x-api-key", tc.key)
		resp, err := tg.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("request %d (%s): got %d, want %d", i, tc.key, resp.StatusCode, tc.want)
		}
	}
}
