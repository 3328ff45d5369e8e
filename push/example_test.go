package push_test

import (
	"fmt"

	"tollgate/plans"
	"tollgate/push"
)

// The Redis keys of the push protocol under the default prefix.
func Example_keys() {
	hash := plans.HashKey("examplekeyvalue000000000000000001", nil) // 64 hex digits
	fmt.Println(push.SnapshotKey(push.DefaultPrefix))
	fmt.Println(push.VersionKey(push.DefaultPrefix))
	fmt.Println(push.StreamKey(push.DefaultPrefix))
	fmt.Println(push.KeyRecordKey(push.DefaultPrefix, hash) == "tg:key:{"+hash+"}")
	fmt.Println(push.CacheGenKey(push.DefaultPrefix, "a1b2c3d4e5", "prod"))
	// Output:
	// tg:config:snapshot
	// tg:config:version
	// tg:config:changes
	// true
	// tg:cache:gen:{a1b2c3d4e5:prod}
}
