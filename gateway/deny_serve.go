package gateway

import (
	"time"

	"tollgate/plans"
)

// refuseRemembered answers a keyed request from the refusal memory: when
// its plan bucket or quota is remembered as refusing until after now, it
// writes the same 429 (rate-limit headers, Retry-After) Redis would have
// decided and returns true, without a Redis round trip. Otherwise it
// notes the memory's generation and the time, for the decision that
// follows, and returns false. ex.lreq was built by serveAPI.
//
// Headers of a remembered refusal reuse the refusal's states: exact for
// the refusing limit (no token or no quota left, same reset); the other
// limit's remaining count is the one seen at the refusal (nothing is
// charged while refused, but other nodes may have charged the quota and a
// bucket refills), so it is a lower bound for a bucket.
func (s *Server) refuseRemembered(w *statusWriter, ex *exchange, m *method, rec *plans.KeyRecord, sp *stagePlan) bool {
	now := time.Now()
	if sp != nil {
		if d, ok := s.deny.lookup(&ex.lreq, m.stage, now); ok {
			writeRateLimitHeaders(w.Header(), d, planBucket(&ex.lreq), sp.quota != nil)
			s.writeRefusal(w, ex, m, d)
			return true
		}
	}
	ex.denyGen, ex.sent = s.deny.generation(), now
	return false
}
