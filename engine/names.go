package engine

import "tollgate/keyspace"

// maxNames bounds the cache of shared bucket names and of stage cache
// states; it starts again when full (config churn), refilled by the
// requests that follow.
const maxNames = 1 << 16

// names caches the Redis key names of shared buckets, which every request
// of a method needs: building them per request would cost an allocation
// each, and the lookup takes no lock (memo). Per-key names are
// built per request (they differ per caller).
type names struct {
	account string
	stage   *memo[stageMethod, string]
}

// stageMethod names one method of one stage.
type stageMethod struct{ api, stage, method, path string }

func newNames(keys keyspace.Space) *names {
	return &names{account: keys.AccountBucket(), stage: newMemo(maxNames, func(k stageMethod) string {
		return keys.StageBucket(k.api, k.stage, k.method, k.path)
	})}
}

// stageBucket returns keyspace's StageBucket name.
func (n *names) stageBucket(api, stage, method, path string) string {
	return n.stage.get(stageMethod{api, stage, method, path})
}
