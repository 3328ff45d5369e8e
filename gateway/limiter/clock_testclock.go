//go:build testclock

package limiter

import (
	"strconv"
	"sync/atomic"
	"time"
)

// clockHook holds the test clock, if one is set.
type clockHook struct {
	now atomic.Pointer[func() time.Time]
}

// arg returns the test clock's time in Unix microseconds, or "" (Redis
// TIME) when no clock is set.
func (h *clockHook) arg() string {
	f := h.now.Load()
	if f == nil {
		return ""
	}
	return strconv.FormatInt((*f)().UnixMicro(), 10)
}

// SetClock makes every later script run use now() instead of Redis TIME;
// nil restores Redis TIME. It exists only in builds with the testclock tag,
// so production binaries cannot be given a clock. Safe for concurrent use.
func (l *Limiter) SetClock(now func() time.Time) {
	if now == nil {
		l.clock.now.Store(nil)
		return
	}
	l.clock.now.Store(&now)
}
