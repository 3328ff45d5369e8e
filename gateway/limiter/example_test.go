package limiter_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"tollgate/gateway/limiter"
	"tollgate/internal/redistest"
)

// A plan allowing bursts of 2 at one request per 1000 s, with a quota of 10
// a day: the third quick request is throttled by the plan and costs no
// quota.
func ExampleLimiter_Decide() {
	ctx := context.Background()
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	prefix := "ex" + rand.Text()[:8] // a real gateway uses the default, "tg"
	defer redistest.DeletePrefix(ctx, rdb, prefix)

	l := limiter.New(rdb, limiter.Options{Prefix: prefix, Timeout: time.Second})
	if err := l.Load(ctx); err != nil {
		log.Fatal(err)
	}
	k := l.Keys()
	req := &limiter.Request{
		Buckets: []limiter.Bucket{
			{Key: k.PlanBucket("key0000001", "plan01"), RateLimit: 0.001, BurstLimit: 2, Level: limiter.LevelPlan},
			{Key: k.AccountBucket(), RateLimit: 10000, BurstLimit: 5000, Level: limiter.LevelAccount},
		},
		Quota:    &limiter.Quota{Key: k.Quota("key0000001", "plan01"), Limit: 10, Period: "DAY"},
		UsageKey: k.Usage("key0000001", "plan01"),
	}
	for range 3 {
		d, err := l.Decide(ctx, req)
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

func ExampleKeys() {
	k := limiter.Keys{} // prefix "tg"
	fmt.Println(k.PlanBucket("abcdefghij", "a1b2c3"))
	fmt.Println(k.PlanMethodBucket("abcdefghij", "a1b2c3", "x1y2z3w4v5", "prod", "GET", "/pets/{petId}"))
	fmt.Println(k.Quota("abcdefghij", "a1b2c3"))
	fmt.Println(k.StageBucket("x1y2z3w4v5", "prod", "GET", "/pets"))
	fmt.Println(k.AccountBucket())
	// Output:
	// tg:{k:abcdefghij}:tb:a1b2c3
	// tg:{k:abcdefghij}:tb:a1b2c3:x1y2z3w4v5:prod:GET/pets/{petId}
	// tg:{k:abcdefghij}:q:a1b2c3
	// tg:{s:x1y2z3w4v5:prod}:tb:GET/pets
	// tg:{acct}:tb
}
