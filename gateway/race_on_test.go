//go:build race

package gateway

// raceEnabled: the race detector drops sync.Pool items at random, so
// allocation counts are not asserted under it.
const raceEnabled = true
