package engine

import (
	"sync"

	"tollgate/keyspace"
)

// maxNames bounds the cache of shared bucket names; it is cleared when
// full (config churn), and refilled by the requests that follow.
const maxNames = 1 << 16

// names caches the Redis key names of shared buckets, which every request
// of a method needs: building them per request would cost an allocation
// each. Per-key names are built per request (they differ per caller).
type names struct {
	keys    keyspace.Space
	account string
	mu      sync.RWMutex
	stage   map[stageMethod]string
}

// stageMethod names one method of one stage.
type stageMethod struct{ api, stage, method, path string }

func newNames(keys keyspace.Space) *names {
	return &names{keys: keys, account: keys.AccountBucket(), stage: map[stageMethod]string{}}
}

// stageBucket returns keyspace's StageBucket name, from the cache when it
// was built before.
func (n *names) stageBucket(api, stage, method, path string) string {
	k := stageMethod{api, stage, method, path}
	n.mu.RLock()
	name, ok := n.stage[k]
	n.mu.RUnlock()
	if ok {
		return name
	}
	name = n.keys.StageBucket(api, stage, method, path)
	n.mu.Lock()
	if len(n.stage) >= maxNames {
		clear(n.stage)
	}
	n.stage[k] = name
	n.mu.Unlock()
	return name
}
