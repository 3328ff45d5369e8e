package engine_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/engine"
	"tollgate/internal/redistest"
	"tollgate/limit"
	"tollgate/plans"
)

// A plan allowing bursts of 2 at one request per 1000 s, with a quota of 10
// a day: the third quick request is throttled by the plan and costs no
// quota.
func ExampleEngine_Decide() {
	ctx := context.Background()
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	prefix := "ex" + rand.Text()[:8] // a real gateway uses the default, "tg"
	defer redistest.DeletePrefix(ctx, rdb, prefix)

	eng := engine.New(rdb, engine.Options{Prefix: prefix, Timeout: time.Second})
	if err := eng.Load(ctx); err != nil {
		log.Fatal(err)
	}
	req := &limit.Request{
		KeyID: "key0000001", PlanID: "plan01", API: "x1y2z3w4v5", Stage: "prod",
		Buckets: []limit.Bucket{
			{Level: limit.LevelPlan, RateLimit: 0.001, BurstLimit: 2},
			{Level: limit.LevelAccount, RateLimit: 10000, BurstLimit: 5000},
		},
		Quota: &limit.Quota{Limit: 10, Period: plans.PeriodDay},
	}
	for range 3 {
		d, err := eng.Decide(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("allowed=%v refused=%v plan remaining=%d quota remaining=%d retry≈%.0fs\n",
			d.Allowed, d.Refused, d.Plan.Remaining, d.Quota.Remaining, d.RetryAfter.Seconds())
	}
	// Output:
	// allowed=true refused=none plan remaining=1 quota remaining=9 retry≈0s
	// allowed=true refused=none plan remaining=0 quota remaining=8 retry≈0s
	// allowed=false refused=plan plan remaining=0 quota remaining=8 retry≈1000s
}
