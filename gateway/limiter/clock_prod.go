//go:build !testclock

package limiter

// clockHook is empty in production builds: the script always reads Redis
// TIME. Test builds (-tags testclock) add Limiter.SetClock.
type clockHook struct{}

// arg returns the script's time argument: "" means "use Redis TIME".
func (clockHook) arg() string { return "" }
