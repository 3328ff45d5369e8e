package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"tollgate/internal/clocktest"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/plans/postgres/postgrestest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newDB returns a store on a fresh database with a clock starting at t0
// and advancing a second per transaction. It marks the test parallel.
func newDB(t *testing.T) *postgres.DB {
	t.Helper()
	t.Parallel()
	return postgrestest.MustDBWith(t, postgres.Options{Now: clocktest.Ticking(t0, time.Second)})
}

var ctx = context.Background()

// wantErr fails t unless err is a *plans.Error of kind k whose field is
// field (when field is not "-").
func wantErr(t *testing.T, err error, k plans.Kind, field string) {
	t.Helper()
	var pe *plans.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v, want a *plans.Error of kind %v", err, k)
	}
	if pe.Kind != k {
		t.Fatalf("got kind %v (%v), want %v", pe.Kind, err, k)
	}
	if field != "-" && pe.Field != field {
		t.Fatalf("got field %q (%v), want %q", pe.Field, err, field)
	}
}

// wantMsg fails t unless err is a *plans.Error of kind k with message msg.
func wantMsg(t *testing.T, err error, k plans.Kind, msg string) {
	t.Helper()
	wantErr(t, err, k, "-")
	if got := plans.ErrorMessage(err); got != msg {
		t.Fatalf("got message %q, want %q", got, msg)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is an API with GET / and GET /pets (MOCK integrations),
// deployed to stage "prod".
type fixture struct {
	api        *plans.RestApi
	root, pets *plans.Resource
	deployment *plans.Deployment
}

func newAPI(t *testing.T, db *postgres.DB, name string) *plans.RestApi {
	t.Helper()
	api := &plans.RestApi{Name: name}
	must(t, db.CreateRestApi(ctx, api))
	return api
}

func rootOf(t *testing.T, db *postgres.DB, apiID string) *plans.Resource {
	t.Helper()
	rs, _, err := db.ListResources(ctx, apiID, pageAll)
	must(t, err)
	for i := range rs {
		if rs[i].Path == "/" {
			return &rs[i]
		}
	}
	t.Fatalf("api %s has no root resource", apiID)
	return nil
}

// addMethod puts method m with a MOCK integration on a resource.
func addMethod(t *testing.T, db *postgres.DB, apiID, resourceID, m string, keyRequired bool) {
	t.Helper()
	must(t, db.PutMethod(ctx, apiID, resourceID, &plans.Method{HTTPMethod: m, APIKeyRequired: keyRequired}))
	must(t, db.PutIntegration(ctx, apiID, resourceID, m, &plans.Integration{Type: plans.IntegrationMock}))
}

func newFixture(t *testing.T, db *postgres.DB) *fixture {
	t.Helper()
	f := &fixture{api: newAPI(t, db, "pets")}
	f.root = rootOf(t, db, f.api.ID)
	var err error
	f.pets, err = db.CreateResource(ctx, f.api.ID, f.root.ID, "pets")
	must(t, err)
	addMethod(t, db, f.api.ID, f.root.ID, "GET", false)
	addMethod(t, db, f.api.ID, f.pets.ID, "GET", true)
	f.deployment = &plans.Deployment{Description: "first"}
	must(t, db.CreateDeployment(ctx, f.api.ID, f.deployment, "prod", "production", map[string]string{"up": "example.com"}))
	return f
}

// addStage creates another stage of the fixture's API on its deployment.
func (f *fixture) addStage(t *testing.T, db *postgres.DB, name string) {
	t.Helper()
	must(t, db.CreateStage(ctx, f.api.ID, &plans.Stage{StageName: name, DeploymentID: f.deployment.ID}))
}

func newPlan(t *testing.T, db *postgres.DB, name string, stages ...plans.ApiStage) *plans.UsagePlan {
	t.Helper()
	p := &plans.UsagePlan{Name: name, ApiStages: stages}
	must(t, db.CreateUsagePlan(ctx, p))
	return p
}

// newKey creates an enabled key with a random value; it returns the key
// and its hash.
func newKey(t *testing.T, db *postgres.DB, name string) (*plans.ApiKey, string) {
	t.Helper()
	k := &plans.ApiKey{Name: name, Enabled: true, Value: plans.NewKeyValue()}
	hash := plans.HashKey(k.Value, nil)
	must(t, db.CreateApiKey(ctx, k, hash))
	return k, hash
}

// version returns the current config version.
func version(t *testing.T, db *postgres.DB) int64 {
	t.Helper()
	v, err := db.ConfigVersion(ctx)
	must(t, err)
	return v
}

// lastChange returns the newest recorded change.
func lastChange(t *testing.T, db *postgres.DB) plans.Change {
	t.Helper()
	v := version(t, db)
	cs, err := db.Changes(ctx, v-1, 10)
	must(t, err)
	if len(cs) != 1 || cs[0].Version != v {
		t.Fatalf("got changes %+v after %d, want one at version %d", cs, v-1, v)
	}
	return cs[0]
}

func slicesSort(s []string) { slices.Sort(s) }

func plansPage(limit int) plans.Page { return plans.Page{Limit: limit} }
