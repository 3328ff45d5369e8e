package plans

// Account holds the account-wide throttle that bounds all traffic through
// the gateway. Defaults: 10000 requests per second, burst 5000 (seeded from
// TOLLGATE_ACCOUNT_RATE_LIMIT / TOLLGATE_ACCOUNT_BURST_LIMIT on first start).
// JSON shape of AWS's Account (GetAccount).
type Account struct {
	ThrottleSettings Throttle `json:"throttleSettings"`
	Features         []string `json:"features"`
	ApiKeyVersion    string   `json:"apiKeyVersion"`
}

// DefaultAccountThrottle is AWS's default account throttle.
var DefaultAccountThrottle = Throttle{RateLimit: 10000, BurstLimit: 5000}
