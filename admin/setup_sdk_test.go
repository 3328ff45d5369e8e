package admin_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
	"github.com/aws/smithy-go"

	"tollgate/admin"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
	"tollgate/seal"
)

var _ admin.Store = (*postgres.DB)(nil)

const (
	akid   = "AKIDADMINTEST"
	secret = "admin-test-secret-access-key"
	token  = "admin-test-bearer-token-0123456789abcdef"
)

// recorder is the test Publisher: it counts Publish calls and records
// stage cache flushes ("apiId:stage"). It is neither Redis nor PostgreSQL,
// so a fake is fine here.
type recorder struct {
	mu        sync.Mutex
	publishes int
	flushes   []string
	fail      error
}

func (r *recorder) Publish(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.publishes++
	return r.fail
}

func (r *recorder) FlushStageCache(_ context.Context, apiID, stage string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.flushes = append(r.flushes, apiID+":"+stage)
	return nil
}

func (r *recorder) failWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.publishes
}

func (r *recorder) flushed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.flushes...)
}

// env is one test's admin: a fresh database, a recorder and an SDK client.
type env struct {
	t   *testing.T
	url string
	c   *apigateway.Client
	pub *recorder
	ctx context.Context
	db  *postgres.DB
	// dbURL is the test's database, for looking into tables
	// (postgrestest.MustConn).
	dbURL string
}

// newEnv starts the admin on a fresh database behind httptest.
func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with the options changed by with (when not nil)
// before the admin starts.
func newEnvWith(t *testing.T, with func(*admin.Options)) *env {
	t.Helper()
	pub := &recorder{}
	dbURL := postgrestest.MustURL(t)
	db := postgrestest.MustOpen(t, dbURL, postgres.Options{})
	opts := admin.Options{
		Store:           db,
		CredentialStore: db,
		Secrets:         testSecretsKey(t),
		Audit:           db,
		Config:          db,
		Publisher:       pub,
		Credentials:     admin.Credentials{AccessKeyID: akid, SecretAccessKey: secret, BearerToken: token},
		Logger:          slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Ready:           func(context.Context) error { return nil },
	}
	if with != nil {
		with(&opts)
	}
	srv := httptest.NewServer(admin.New(opts))
	t.Cleanup(srv.Close)
	c := apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		Retryer:      aws.NopRetryer{},
	})
	return &env{t: t, url: srv.URL, c: c, pub: pub, ctx: context.Background(), db: db, dbURL: dbURL}
}

// sdk returns an SDK client of the test's admin signing with akid/secret.
func (e *env) sdk(akid, secret string) *apigateway.Client {
	return apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String(e.url),
		Region:       "eu-west-1",
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		Retryer:      aws.NopRetryer{},
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// result holds an SDK call's output and error: call(c.Op(...)).must(t).
type result[T any] struct {
	v   T
	err error
}

func call[T any](v T, err error) result[T] { return result[T]{v, err} }

// must fails the test on the call's error and returns its output.
func (r result[T]) must(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatalf("got error %v, want none", r.err)
	}
	return r.v
}

// wantCode requires err to be an AWS API error with code.
func wantCode(t *testing.T, err error, code string) smithy.APIError {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got error %v, want %s", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("got %s (%s), want %s", ae.ErrorCode(), ae.ErrorMessage(), code)
	}
	return ae
}

// wantBadRequest requires a BadRequestException whose message names field.
func wantBadRequest(t *testing.T, err error, field string) {
	t.Helper()
	ae := wantCode(t, err, "BadRequestException")
	if !strings.Contains(ae.ErrorMessage(), field) {
		t.Fatalf("got message %q, want it to name %q", ae.ErrorMessage(), field)
	}
	if _, ok := err.(interface{ Unwrap() error }); ok {
		var typed *types.BadRequestException
		if !errors.As(err, &typed) {
			t.Fatalf("got %T, want the SDK to parse a *types.BadRequestException", err)
		}
	}
}

// op builds a patch operation.
func op(o types.Op, path, value string) types.PatchOperation {
	p := types.PatchOperation{Op: o, Path: aws.String(path)}
	if value != "" {
		p.Value = aws.String(value)
	}
	return p
}

// raw sends an HTTP request with the bearer token and returns the status,
// the x-amzn-ErrorType and the body.
func (e *env) raw(method, path, body string) (int, string, string) {
	e.t.Helper()
	return e.rawAs(token, method, path, body)
}

// rawAs is raw with bearer token tok.
func (e *env) rawAs(tok, method, path, body string) (int, string, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("x-amzn-ErrorType"), string(b)
}

// api creates a RestApi with a MOCK GET on /pets, deployed to stage.
func (e *env) api(name, stage string) (apiID, petsID string) {
	e.t.Helper()
	t := e.t
	a := call(e.c.CreateRestApi(e.ctx, &apigateway.CreateRestApiInput{Name: aws.String(name)})).must(t)
	rs := call(e.c.GetResources(e.ctx, &apigateway.GetResourcesInput{RestApiId: a.Id})).must(t)
	pets := call(e.c.CreateResource(e.ctx, &apigateway.CreateResourceInput{RestApiId: a.Id, ParentId: rs.Items[0].Id, PathPart: aws.String("pets")})).must(t)
	call(e.c.PutMethod(e.ctx, &apigateway.PutMethodInput{RestApiId: a.Id, ResourceId: pets.Id, HttpMethod: aws.String("GET"), AuthorizationType: aws.String("NONE"), ApiKeyRequired: true})).must(t)
	call(e.c.PutIntegration(e.ctx, &apigateway.PutIntegrationInput{RestApiId: a.Id, ResourceId: pets.Id, HttpMethod: aws.String("GET"), Type: types.IntegrationTypeMock})).must(t)
	if stage != "" {
		call(e.c.CreateDeployment(e.ctx, &apigateway.CreateDeploymentInput{RestApiId: a.Id, StageName: aws.String(stage)})).must(t)
	}
	return *a.Id, *pets.Id
}

// testSecretsKey is the admin's TOLLGATE_SECRETS_KEY in tests.
func testSecretsKey(t *testing.T) *seal.Key {
	t.Helper()
	k, err := seal.NewKey([]byte("admin-test-secrets-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}
