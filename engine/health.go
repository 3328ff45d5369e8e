package engine

import (
	"errors"
	"fmt"
	"sync/atomic"
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

// health is whether the node finds Redis down: the last run failed
// without a reply (downAt, Unix ns; 0 when it had one), and the runs in
// flight.
type health struct {
	timeout  time.Duration // Options.Timeout
	inFlight atomic.Int32
	downAt   atomic.Int64
}

// runStarted counts a run in flight.
func (h *health) runStarted() { h.inFlight.Add(1) }

// runEnded ends a run that decided live: Redis is up again when it
// replied to any of the run's calls, down otherwise.
func (h *health) runEnded(replied bool) {
	if replied {
		h.downAt.Store(0)
	} else {
		h.downAt.Store(time.Now().UnixNano())
	}
	h.inFlight.Add(-1)
}

// isReply reports whether err is an error reply of Redis (it answered).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// down returns ErrRedisDown, wrapped with how long ago the last run
// failed, when a decision is not to be sent now (see ErrRedisDown), nil
// when it is.
func (h *health) down(now time.Time) error {
	at := h.downAt.Load()
	if at == 0 {
		return nil
	}
	since := now.Sub(time.Unix(0, at))
	if since < h.timeout || h.inFlight.Load() > 0 {
		return fmt.Errorf("%w (last run failed %v ago)", ErrRedisDown, since.Round(time.Millisecond))
	}
	return nil
}
