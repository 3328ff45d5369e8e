package postgres_test

import (
	"strings"
	"testing"

	"tollgate/plans"
)

func TestCreateStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	s := &plans.Stage{StageName: "beta", DeploymentID: f.deployment.ID, CacheClusterEnabled: true, CacheClusterSize: "0.5",
		MethodSettings: map[string]plans.MethodSetting{"*/*": func() plans.MethodSetting {
			ms := plans.DefaultMethodSetting()
			ms.ThrottlingRateLimit, ms.ThrottlingBurstLimit = 10, 20
			return ms
		}()},
		Tags: map[string]string{"team": "x"}}
	must(t, db.CreateStage(ctx, f.api.ID, s))
	got, err := db.GetStage(ctx, f.api.ID, "beta")
	must(t, err)
	if got.CacheClusterStatus != "AVAILABLE" || got.MethodSettings["*/*"].ThrottlingBurstLimit != 20 ||
		got.Tags["team"] != "x" || got.CreatedDate.IsZero() || !got.LastUpdatedDate.Equal(got.CreatedDate.Time) {
		t.Errorf("got %+v, want the stored stage", got)
	}
	ch := lastChange(t, db)
	if !ch.Snapshot || strings.Join(ch.Stages, ",") != f.api.ID+":beta" {
		t.Errorf("got change %+v, want snapshot and stage %s:beta", ch, f.api.ID)
	}
	list, err := db.ListStages(ctx, f.api.ID)
	must(t, err)
	if len(list) != 2 || list[0].StageName != "beta" || list[1].StageName != "prod" {
		t.Errorf("got stages %+v, want beta and prod", list)
	}
}

func TestCreateStageErrors(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	v := version(t, db)
	cases := []struct {
		name  string
		s     plans.Stage
		kind  plans.Kind
		field string
	}{
		{"duplicate", plans.Stage{StageName: "prod", DeploymentID: f.deployment.ID}, plans.KindConflict, ""},
		{"missing deployment", plans.Stage{StageName: "x", DeploymentID: "nope"}, plans.KindInvalid, "deploymentId"},
		{"bad name", plans.Stage{StageName: "a b", DeploymentID: f.deployment.ID}, plans.KindInvalid, "stageName"},
		{"cache size", plans.Stage{StageName: "x", DeploymentID: f.deployment.ID, CacheClusterSize: "2"}, plans.KindInvalid, "cacheClusterSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, db.CreateStage(ctx, f.api.ID, &c.s), c.kind, c.field)
		})
	}
	if got := version(t, db); got != v {
		t.Errorf("got version %d after refused writes, want %d", got, v)
	}
	_, err := db.GetStage(ctx, f.api.ID, "nope")
	wantMsg(t, err, plans.KindNotFound, "Invalid Stage identifier specified")
}

func TestUpdateStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	before, err := db.GetStage(ctx, f.api.ID, "prod")
	must(t, err)
	got, err := db.UpdateStage(ctx, f.api.ID, "prod", func(s *plans.Stage) error {
		ms := s.NewMethodSetting()
		ms.ThrottlingRateLimit = 5
		ms.ThrottlingBurstLimit = 5
		s.MethodSettings[plans.MethodSettingKey("/pets", "GET")] = ms
		s.StageName = "renamed"
		return nil
	})
	must(t, err)
	if got.StageName != "prod" || !got.LastUpdatedDate.After(before.LastUpdatedDate.Time) || !got.CreatedDate.Equal(before.CreatedDate.Time) {
		t.Errorf("got %+v, want name kept, lastUpdatedDate advanced, createdDate kept", got)
	}
	stored, err := db.GetStage(ctx, f.api.ID, "prod")
	must(t, err)
	if stored.MethodSettings["~1pets/GET"].ThrottlingRateLimit != 5 {
		t.Errorf("got method settings %+v, want ~1pets/GET rate 5", stored.MethodSettings)
	}
	cases := []struct {
		name  string
		fn    func(*plans.Stage)
		field string
	}{
		{"deployment", func(s *plans.Stage) { s.DeploymentID = "nope" }, "deploymentId"},
		{"burst 0", func(s *plans.Stage) {
			s.MethodSettings["*/*"] = plans.MethodSetting{ThrottlingRateLimit: 1, ThrottlingBurstLimit: 0,
				LoggingLevel: "OFF", UnauthorizedCacheControlHeaderStrategy: plans.FailWith403}
		}, "methodSettings.*/*.throttlingBurstLimit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.UpdateStage(ctx, f.api.ID, "prod", func(s *plans.Stage) error { c.fn(s); return nil })
			wantErr(t, err, plans.KindInvalid, c.field)
		})
	}
}

func TestDeleteStage(t *testing.T) {
	db := newDB(t)
	f := newFixture(t, db)
	p := newPlan(t, db, "gold", plans.ApiStage{ApiID: f.api.ID, Stage: "prod"})
	err := db.DeleteStage(ctx, f.api.ID, "prod")
	wantErr(t, err, plans.KindInvalid, "stageName")
	if !strings.Contains(plans.ErrorMessage(err), p.ID) {
		t.Errorf("got message %q, want it to name plan %s", plans.ErrorMessage(err), p.ID)
	}
	_, err = db.UpdateUsagePlan(ctx, p.ID, func(p *plans.UsagePlan) error { p.ApiStages = nil; return nil })
	must(t, err)
	must(t, db.DeleteStage(ctx, f.api.ID, "prod"))
	_, err = db.GetStage(ctx, f.api.ID, "prod")
	wantErr(t, err, plans.KindNotFound, "")
	wantMsg(t, db.DeleteStage(ctx, f.api.ID, "prod"), plans.KindNotFound, "Invalid Stage identifier specified")
}
