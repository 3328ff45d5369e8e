package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/jackc/pgx/v5"

	"tollgate/cmd/echo/echoserver"
	"tollgate/internal/clocktest"
	"tollgate/internal/hammertest"
	"tollgate/internal/redistest"
	"tollgate/internal/waittest"
	"tollgate/keyspace"
	"tollgate/plans/postgres/postgrestest"
)

// stackOptions varies the stack mustStackWith starts; the zero value is
// mustStack's (shared test Redis, fresh database, failure mode open).
type stackOptions struct {
	redisURL       string        // "" = the shared test Redis
	cluster        bool          // the test Redis Cluster (TOLLGATE_TEST_REDIS_CLUSTER_URL) instead
	databaseURL    string        // "" = a fresh database (postgrestest.MustURL)
	failureMode    string        // "" = "open"
	redisTimeout   time.Duration // 0 = 5s: a loaded test machine never fails open by accident
	dbTimeout      time.Duration // TOLLGATE_DATABASE_TIMEOUT; 0 = the default
	trustedProxies []string      // TOLLGATE_TRUSTED_PROXIES of the gateways
	logs           *logBuffer    // when set, every node logs into it
	allInOne       bool          // one node of role "all" is the admin and both gateways
	adminToken     string        // TOLLGATE_ADMIN_TOKEN besides the SigV4 credentials
	flushInterval  time.Duration // TOLLGATE_USAGE_FLUSH_INTERVAL; 0 = the default
	secretsKey     string        // TOLLGATE_SECRETS_KEY of every node
	tlsCerts       string        // TOLLGATE_GATEWAY_TLS_CERTIFICATES of the gateways
	webhookURL     string        // TOLLGATE_WEBHOOK_URL (secret testWebhookSecret); "" = none
	keyScanEvery   time.Duration // the admin's expiry notice scan interval; 0 = the default
	portalAddr     string        // TOLLGATE_PORTAL_ADDR; "" = the admin port
}

// testWebhookSecret is TOLLGATE_WEBHOOK_SECRET of stacks with a webhookURL.
var testWebhookSecret = []byte("tollgate-test-webhook-secret")

// mustStackWith starts one admin and two gateway Mains sharing one database
// and one Redis key prefix, plus the echo upstream; all closed at cleanup.
func mustStackWith(t *testing.T, o stackOptions) *stack {
	t.Helper()
	if o.cluster {
		_, prefix := redistest.MustCluster(t) // cleanup as MustClient's
		o.redisURL = redistest.ClusterURL()
		return startStack(t, o, prefix)
	}
	if o.redisURL == "" {
		// MustClient's cleanup deletes the prefix; registered before the
		// nodes start, it runs after they close.
		_, prefix := redistest.MustClient(t)
		o.redisURL = redistest.URL()
		return startStack(t, o, prefix)
	}
	return startStack(t, o, redistest.MustPrefix(t))
}

func startStack(t *testing.T, o stackOptions, prefix string) *stack {
	t.Helper()
	if o.databaseURL == "" {
		o.databaseURL = postgrestest.MustURL(t)
		setTimeZone(t, o.databaseURL)
	}
	if o.failureMode == "" {
		o.failureMode = "open"
	}
	if o.redisTimeout == 0 {
		o.redisTimeout = 5 * time.Second
	}
	s := &stack{echo: echoserver.New(), clock: clocktest.New(time.Time{}), keyScanEvery: o.keyScanEvery}
	up := httptest.NewServer(s.echo)
	t.Cleanup(up.Close)
	s.echoURL = up.URL
	base := Config{
		DatabaseURL: o.databaseURL, RedisURL: o.redisURL, RedisPrefix: prefix,
		RedisTimeout: o.redisTimeout, AdminAddr: "127.0.0.1:0", GatewayAddr: "127.0.0.1:0",
		MetricsAddr: "127.0.0.1:0", AccountRateLimit: 10000, AccountBurstLimit: 5000,
		GatewayTLSAddr: "127.0.0.1:0", GatewayTLSCerts: o.tlsCerts,
		LimiterFailureMode: o.failureMode, TrustedProxies: o.trustedProxies, DatabaseTimeout: o.dbTimeout,
		LogLevel: "warn", LogFormat: "text", ShutdownTimeout: 5 * time.Second, UsageFlushInterval: o.flushInterval,
		Secrets:    Secrets{AdminAccessKeyID: testAccessKey, AdminSecretAccessKey: testSecretKey, AdminToken: o.adminToken, SecretsKey: []byte(o.secretsKey)},
		WebhookURL: o.webhookURL, KeyExpiryNotice: 168 * time.Hour, PortalAddr: o.portalAddr,
	}
	if o.webhookURL != "" {
		base.Secrets.WebhookSecret = testWebhookSecret
	}
	if o.logs == nil {
		o.logs = &logBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the nodes' log lines other than 2xx, 3xx and 429 answers:\n%s", o.logs.failures())
			}
		})
	}
	if o.allInOne {
		s.admin = s.startMain(t, base, "all", o.logs)
		s.gateways = [2]*Main{s.admin, s.admin}
	} else {
		s.admin = s.startMain(t, base, "admin", o.logs)
		s.gateways[0] = s.startMain(t, base, "gateway", o.logs)
		s.gateways[1] = s.startMain(t, base, "gateway", o.logs)
	}
	s.sdk = apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String("http://" + s.admin.AdminAddr),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		Retryer:      aws.NopRetryer{}, // tests see the first answer (503s included)
	})
	return s
}

// setTimeZone makes America/New_York the default TimeZone of every later session of the
// database at dbURL: a date computed in the database's local time instead
// of UTC would then be off by four or five hours.
func setTimeZone(t *testing.T, dbURL string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect %s: %v", dbURL, err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET timezone = 'America/New_York'"); err != nil {
		t.Fatalf("set the database time zone: %v", err)
	}
}

// startMain runs one Main of role with cfg, its scripts on the stack's
// clock; it is closed at cleanup.
func (s *stack) startMain(t *testing.T, cfg Config, role string, logs *logBuffer) *Main {
	t.Helper()
	cfg.Role = role
	m := NewMain(cfg)
	m.clock = s.clock.Now
	m.keyScanEvery = s.keyScanEvery
	if logs != nil {
		m.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("start %s: %v", role, err)
	}
	return m
}

// restartGateway closes gateway node i and starts a new one with the same
// config in its place.
func (s *stack) restartGateway(t *testing.T, i int) {
	t.Helper()
	old := s.gateways[i]
	_ = old.Close()
	s.gateways[i] = s.startMain(t, old.Config, "gateway", nil)
}

// logBuffer collects log output safely from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// failures returns the lines that are not an access log line of an
// admitted, redirected or throttled request: errors, warnings and the
// reasons of 4xx and 5xx answers, to tell why a test saw what it saw.
func (b *logBuffer) failures() string {
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		if strings.Contains(line, " msg=request ") && (strings.Contains(line, " status=2") || strings.Contains(line, " status=3") || strings.Contains(line, " status=429 ")) {
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// sync waits until both gateways serve the snapshot the admin last
// published, or fails after 2 s; it returns how long that took. (Key
// records need no wait: a gateway reads a key it has not cached from
// Redis.)
func (s *stack) sync(t *testing.T) time.Duration {
	t.Helper()
	want := s.publishedVersion(t)
	var a, b int64
	took, ok := waittest.Poll(2*time.Second, func() bool {
		a, b = s.gateways[0].gw.Version(), s.gateways[1].gw.Version()
		return a >= want && b >= want
	})
	if !ok {
		t.Fatalf("gateways serve versions %d and %d after 2s, want %d", a, b, want)
	}
	return took
}

// publishedVersion returns the version of the snapshot published in Redis.
func (s *stack) publishedVersion(t *testing.T) int64 {
	t.Helper()
	b, err := s.admin.rdb.Get(context.Background(), keyspace.Space{Prefix: s.admin.Config.RedisPrefix}.Snapshot()).Bytes()
	if err != nil {
		t.Fatalf("read the snapshot: %v", err)
	}
	var snap struct {
		Version int64 `json:"version"`
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatalf("decode the snapshot: %v", err)
	}
	return snap.Version
}

// caseAPI is an API made for the cases: GET /items and GET /other (API key
// required, proxied to the echo upstream) and OPTIONS /items (no key, MOCK),
// deployed to stage prod.
type caseAPI struct {
	id, items, other string // API id and the resource ids
}

// mustCaseAPI creates a caseAPI through the AWS SDK.
func (s *stack) mustCaseAPI(t *testing.T) caseAPI {
	t.Helper()
	ctx, c := context.Background(), s.sdk
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("cases")})
	must(t, "CreateRestApi", err)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	must(t, "GetResources", err)
	a := caseAPI{id: *api.Id}
	for _, part := range []string{"items", "other"} {
		r, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: api.Id, ParentId: res.Items[0].Id, PathPart: aws.String(part)})
		must(t, "CreateResource "+part, err)
		s.mustMethod(t, *api.Id, *r.Id, "GET", true, &apigateway.PutIntegrationInput{
			Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(s.echoURL + "/" + part)})
		if part == "items" {
			a.items = *r.Id
			s.mustMethod(t, *api.Id, *r.Id, "OPTIONS", false, &apigateway.PutIntegrationInput{Type: types.IntegrationTypeMock})
		} else {
			a.other = *r.Id
		}
	}
	_, err = c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")})
	must(t, "CreateDeployment", err)
	return a
}

func (s *stack) mustMethod(t *testing.T, apiID, resID, verb string, keyRequired bool, in *apigateway.PutIntegrationInput) {
	t.Helper()
	ctx := context.Background()
	_, err := s.sdk.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: &apiID, ResourceId: &resID, HttpMethod: &verb,
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: keyRequired})
	must(t, "PutMethod "+verb, err)
	in.RestApiId, in.ResourceId, in.HttpMethod = &apiID, &resID, &verb
	_, err = s.sdk.PutIntegration(ctx, in)
	must(t, "PutIntegration "+verb, err)
}

// planSpec describes a usage plan on one API's stage prod: nil Throttle or
// Quota means no limit in that dimension; Method, when set, is a per-method
// throttle ("/items/GET" → throttle).
type planSpec struct {
	Throttle *types.ThrottleSettings
	Quota    *types.QuotaSettings
	Method   map[string]types.ThrottleSettings
}

// mustPlan creates a usage plan covering api's stage prod.
func (s *stack) mustPlan(t *testing.T, apiID string, p planSpec) string {
	t.Helper()
	plan, err := s.sdk.CreateUsagePlan(context.Background(), &apigateway.CreateUsagePlanInput{
		Name: aws.String("case-plan"), Throttle: p.Throttle, Quota: p.Quota,
		ApiStages: []types.ApiStage{{ApiId: &apiID, Stage: aws.String("prod"), Throttle: p.Method}},
	})
	must(t, "CreateUsagePlan", err)
	return *plan.Id
}

// mustKey creates an enabled API key in plan; it returns its id and value.
func (s *stack) mustKey(t *testing.T, planID string) (id, value string) {
	t.Helper()
	ctx := context.Background()
	key, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("case-key"), Enabled: true})
	must(t, "CreateApiKey", err)
	if planID != "" {
		_, err = s.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: &planID, KeyId: key.Id, KeyType: aws.String("API_KEY")})
		must(t, "CreateUsagePlanKey", err)
	}
	return *key.Id, *key.Value
}

// mustCustomerKeys creates n enabled keys of customer ("<customer>-0",
// ...) in planID and returns their values.
func (s *stack) mustCustomerKeys(t *testing.T, planID, customer string, n int) []string {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, n)
	for i := range keys {
		k, err := s.sdk.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String(fmt.Sprintf("%s-%d", customer, i)), Enabled: true, CustomerId: aws.String(customer)})
		must(t, "CreateApiKey", err)
		_, err = s.sdk.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: &planID, KeyId: k.Id, KeyType: aws.String("API_KEY")})
		must(t, "CreateUsagePlanKey", err)
		keys[i] = *k.Value
	}
	return keys
}

// mustPatchPlan applies replace operations (path → value) to a usage plan.
func (s *stack) mustPatchPlan(t *testing.T, planID string, ops ...string) {
	t.Helper()
	_, err := s.sdk.UpdateUsagePlan(context.Background(), &apigateway.UpdateUsagePlanInput{UsagePlanId: &planID, PatchOperations: replaceOps(ops)})
	must(t, "UpdateUsagePlan", err)
}

// send makes one request through gateway node i with the given headers
// (the Host names apiID); the body is discarded.
func (s *stack) send(t *testing.T, i int, method, apiID, path string, hdr http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.gateways[i].GatewayAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = apiID + ".execute-api.localhost"
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s via gateway %d: %v", method, path, i, err)
	}
	_ = res.Body.Close()
	return res
}

// seq is one expected response of a sequence: status, and when not "-"
// the X-RateLimit-Remaining and X-RateLimit-Limit values ("" = absent).
type seq struct {
	status           int
	remaining, limit string
}

// expectSeq sends len(want) GETs of /prod/items with key, alternating the
// two gateways, and checks each against want; it returns the responses.
func (s *stack) expectSeq(t *testing.T, apiID, key string, want []seq) []*http.Response {
	t.Helper()
	out := make([]*http.Response, len(want))
	for i, w := range want {
		res := s.call(t, i%2, apiID, "/prod/items", key)
		out[i] = res
		if res.StatusCode != w.status {
			t.Errorf("request %d via gateway %d: got status %d, want %d", i+1, i%2, res.StatusCode, w.status)
		}
		checkHeader(t, i+1, res, "X-RateLimit-Remaining", w.remaining)
		checkHeader(t, i+1, res, "X-RateLimit-Limit", w.limit)
	}
	return out
}

func checkHeader(t *testing.T, n int, res *http.Response, name, want string) {
	t.Helper()
	if want == "-" {
		return
	}
	if got := res.Header.Get(name); got != want {
		t.Errorf("request %d: %s = %q, want %q", n, name, got, want)
	}
}

// repeat returns n copies of one expectation.
func repeat(n int, w seq) []seq {
	out := make([]seq, n)
	for i := range out {
		out[i] = w
	}
	return out
}

// countOK sends n concurrent GETs of /prod/items with key, split across
// both gateways, and returns how many got 200 and the Remaining header of
// each 200.
func (s *stack) countOK(t *testing.T, apiID, key string, n int) (ok int, remaining []string) {
	t.Helper()
	var mu sync.Mutex
	admitted := hammertest.Count(n, 1, func(i, _ int) bool {
		res := s.call(t, i%2, apiID, "/prod/items", key)
		switch res.StatusCode {
		case http.StatusOK:
			mu.Lock()
			remaining = append(remaining, res.Header.Get("X-RateLimit-Remaining"))
			mu.Unlock()
			return true
		case http.StatusTooManyRequests:
		default: // neither admitted nor throttled: say why, for the caller's failure
			t.Logf("key %.8s…, request %d: %d %s", key, i+1, res.StatusCode, res.Header.Get("x-amzn-ErrorType"))
		}
		return false
	})
	return int(admitted), remaining
}

// throttle and quota build SDK limit settings.
func throttle(rate float64, burst int32) *types.ThrottleSettings {
	return &types.ThrottleSettings{RateLimit: rate, BurstLimit: burst}
}

func quota(limit int32, period types.QuotaPeriodType, offset int32) *types.QuotaSettings {
	return &types.QuotaSettings{Limit: limit, Period: period, Offset: offset}
}

func itoa(n int) string { return strconv.Itoa(n) }

// mustPatchStage applies replace operations (path → value) to api's stage
// prod, e.g. "/*/*/throttling/burstLimit", "5".
func (s *stack) mustPatchStage(t *testing.T, apiID string, ops ...string) {
	t.Helper()
	_, err := s.sdk.UpdateStage(context.Background(), &apigateway.UpdateStageInput{RestApiId: &apiID,
		StageName: aws.String("prod"), PatchOperations: replaceOps(ops)})
	must(t, "UpdateStage", err)
}

// mustPatchAccount sets the account throttle.
func (s *stack) mustPatchAccount(t *testing.T, rate float64, burst int32) {
	t.Helper()
	_, err := s.sdk.UpdateAccount(context.Background(), &apigateway.UpdateAccountInput{PatchOperations: replaceOps([]string{
		"/throttleSettings/rateLimit", strconv.FormatFloat(rate, 'g', -1, 64),
		"/throttleSettings/burstLimit", itoa(int(burst))})})
	must(t, "UpdateAccount", err)
}

func replaceOps(ops []string) []types.PatchOperation {
	var po []types.PatchOperation
	for i := 0; i+1 < len(ops); i += 2 {
		po = append(po, types.PatchOperation{Op: types.OpReplace, Path: aws.String(ops[i]), Value: aws.String(ops[i+1])})
	}
	return po
}
