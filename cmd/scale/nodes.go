package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/gateway"
	"tollgate/internal/redisurl"
	"tollgate/plans"
	"tollgate/push"
)

// The configuration the runs serve: one API and stage; GET /q and GET /s
// (MOCK, key required); the stage bucket of GET /s is the shared bucket
// under test; plan01 (the hot key's) has the quota, plan02 (every other
// key's) no limit of its own.
const (
	apiID     = "scaleapi01"
	stageName = "prod"
	hotPlan   = "plan01"
	openPlan  = "plan02"
)

// host is the Host header of the API.
const host = apiID + ".execute-api.localhost"

// snapshot returns the configuration with a quota of quota a day for the
// hot key and a shared stage bucket of burst shared (refilling 0.001 a
// second, so nothing refills during a run) on GET /s.
func snapshot(quota, shared int) *plans.Snapshot {
	mock := func() map[string]*plans.Method {
		return map[string]*plans.Method{"GET": {HTTPMethod: "GET", AuthorizationType: "NONE", APIKeyRequired: true,
			MethodIntegration: &plans.Integration{Type: plans.IntegrationMock, TimeoutInMillis: plans.DefaultTimeoutMillis}}}
	}
	stage := plans.Stage{StageName: stageName, MethodSettings: map[string]plans.MethodSetting{
		"~1s/GET": {ThrottlingRateLimit: 0.001, ThrottlingBurstLimit: int32(shared), LoggingLevel: "OFF"},
	}}
	resources := []plans.Resource{
		{ID: "root", Path: "/"},
		{ID: "rq", ParentID: "root", PathPart: "q", Path: "/q", ResourceMethods: mock()},
		{ID: "rs", ParentID: "root", PathPart: "s", Path: "/s", ResourceMethods: mock()},
	}
	covers := []plans.ApiStage{{ApiID: apiID, Stage: stageName}}
	return &plans.Snapshot{
		Version: 1,
		Account: plans.Throttle{RateLimit: 1e6, BurstLimit: 1e6},
		Apis: map[string]*plans.ApiConfig{apiID: {ID: apiID, ApiKeySource: "HEADER",
			Stages: map[string]*plans.StageConfig{stageName: {Stage: stage, Resources: resources}}}},
		Plans: map[string]*plans.UsagePlan{
			hotPlan:  {ID: hotPlan, Name: hotPlan, ApiStages: covers, Quota: &plans.Quota{Limit: int32(quota), Period: plans.PeriodDay}},
			openPlan: {ID: openPlan, Name: openPlan, ApiStages: covers},
		},
	}
}

// keyValue is the API key value of key i (20+ alphanumerics).
func keyValue(i int) string { return fmt.Sprintf("scalekey%016d", i) }

// keyID is the id of key i.
func keyID(i int) string { return fmt.Sprintf("key%07d", i) }

// loadKeys writes the records of keys from..to-1 (key 0 in the hot
// plan, the others in the open one) and returns how long it took.
func loadKeys(ctx context.Context, rdb redis.UniversalClient, prefix string, from, to int) (time.Duration, error) {
	start := time.Now()
	err := push.LoadKeyRecords(ctx, rdb, prefix, to-from, 1, func(i int) (string, *plans.KeyRecord) {
		i += from
		plan := openPlan
		if i == 0 {
			plan = hotPlan
		}
		return plans.HashKey(keyValue(i), nil), &plans.KeyRecord{KeyID: keyID(i), Enabled: true, PlanIDs: []string{plan}, Version: 1}
	})
	return time.Since(start), err
}

// node is one gateway node: a gateway.Server served over loopback HTTP,
// with its own engine, Redis clients and key cache.
type node struct {
	rdb    redis.UniversalClient
	eng    *engine.Engine
	reader *push.Reader
	srv    *httptest.Server
}

// newNode starts a node on the Redis at url serving snap.
func newNode(ctx context.Context, url, prefix string, snap *plans.Snapshot) (*node, error) {
	rdb, err := redisurl.Open(url)
	if err != nil {
		return nil, err
	}
	n := &node{rdb: rdb, eng: engine.New(rdb, engine.Options{Prefix: prefix, Timeout: time.Second})}
	if err := n.eng.Load(ctx); err != nil {
		return nil, err
	}
	n.reader = push.NewReader(rdb, push.ReaderOptions{Prefix: prefix, Logger: slog.New(slog.DiscardHandler), LookupTimeout: 5 * time.Second})
	gw := gateway.New(gateway.Options{Keys: n.reader, Engine: engine.Port{Engine: n.eng, Top: n.eng}, Logger: slog.New(slog.DiscardHandler)})
	if err := gw.SetSnapshot(snap); err != nil {
		return nil, err
	}
	n.srv = httptest.NewServer(gw)
	return n, nil
}

func (n *node) close() {
	n.srv.Close()
	_ = n.eng.Close()
	_ = n.rdb.Close()
}

// client sends the runs' requests, keeping connections open.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}

// get sends GET path to n with key i and returns the status.
func (n *node) get(ctx context.Context, path string, key int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.srv.URL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	req.Header.Set("x-api-key", keyValue(key))
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, nil
}
