package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrRedisDown is the error (wrapped) of a decision that was not sent
// because Redis is down: the last run of this node failed without a reply
// (connection refused or broken, or no reply within the run's deadline).
// For Options.Timeout after such a failure, and while a run that tries
// Redis again is in flight (with a deadline of Options.Timeout), decisions
// fail at once with it instead of waiting; then the next batch tries Redis
// again. The caller's failure mode decides.
var ErrRedisDown = errors.New("redis is down")

// runStarted counts a run in flight.
func (e *Engine) runStarted() { e.inFlight.Add(1) }

// runEnded ends a run that decided live: Redis is up again when any call
// was answered by Redis (a decision, or an error reply), down otherwise.
func (e *Engine) runEnded(live []*call) {
	replied := false
	for _, c := range live {
		if c.err == nil || isReply(c.err) {
			replied = true
			break
		}
	}
	if replied {
		e.downAt.Store(0)
	} else {
		e.downAt.Store(time.Now().UnixNano())
	}
	e.inFlight.Add(-1)
}

// isReply reports whether err is an error reply of Redis (it answered).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// down returns ErrRedisDown, wrapped with how long ago the last run
// failed, when a decision is not to be sent now (see ErrRedisDown), nil
// when it is.
func (e *Engine) down(now time.Time) error {
	at := e.downAt.Load()
	if at == 0 {
		return nil
	}
	since := now.Sub(time.Unix(0, at))
	if since < e.timeout || e.inFlight.Load() > 0 {
		return fmt.Errorf("%w (last run failed %v ago)", ErrRedisDown, since.Round(time.Millisecond))
	}
	return nil
}

// observe records the Redis time redisUS a run sent at the node's time
// sent reported: the node then estimates Redis time as its own plus the
// offset. Redis read its time after the send, so the estimate is never
// ahead of Redis by more than the clocks drift.
func (e *Engine) observe(sent time.Time, redisUS int64) {
	e.offset.Store(redisUS - sent.UnixMicro())
}

// redisNow estimates Redis time at the node's time t.
func (e *Engine) redisNow(t time.Time) time.Time {
	return t.Add(time.Duration(e.offset.Load()) * time.Microsecond)
}
