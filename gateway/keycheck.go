package gateway

import (
	"net/http"
	"strings"

	"tollgate/plans"
)

// Reasons a key check refuses a request, named in the access log
// (error type INVALID_API_KEY) and never sent to the caller.
const (
	ReasonMissing   = "missing"
	ReasonMalformed = "malformed"
	ReasonChecksum  = "checksum" // the generated shape without its checksum: no lookup
	ReasonUnknown   = "unknown"
	ReasonDisabled  = "disabled"
	ReasonExpired   = "expired" // past its expiry tag, on Redis time
	ReasonRotated   = "rotated" // a rotated key's previous value, past its overlap
	ReasonNoPlan    = "no plan for this stage"
)

// Error types of the access log (docs/behaviour.md, "Logs, metrics, health").
const (
	ErrorTypeInvalidKey     = "INVALID_API_KEY"
	ErrorTypeUnauthorized   = "UNAUTHORIZED" // a method secured by an authorizer or AWS_IAM: closed
	ErrorTypeThrottled      = "THROTTLED"
	ErrorTypeQuota          = "QUOTA_EXCEEDED"
	ErrorTypeUnavailable    = "UNAVAILABLE"
	ErrorTypeNotFound       = "NOT_FOUND"
	ErrorTypeMethod         = "METHOD_NOT_ALLOWED"
	ErrorTypeBadRequest     = "BAD_REQUEST"
	ErrorTypeIntegration    = "INTEGRATION_FAILURE"
	ErrorTypeTimeout        = "INTEGRATION_TIMEOUT"
	ErrorTypeTooLarge       = "REQUEST_TOO_LARGE"
	ErrorTypeRequestTimeout = "REQUEST_TIMEOUT"
	ErrorTypeClientClosed   = "CLIENT_CLOSED"
	ErrorTypeInternal       = "INTERNAL"
)

// levelKeyAttempts is the tollgate_throttled_total level of 429s for too
// many failed key attempts from one client address.
const levelKeyAttempts = "key_attempts"

// checkKey runs the key check of docs/behaviour.md ("Order of work") for
// a method that requires an API key. It sets the key record and the plan
// that covers this stage on ex and returns true, or writes the refusal
// (403, 429 after too many failed attempts from this client, 503 when the
// key cannot be verified) and returns false. A refusal charges nothing.
//
// A client address that has used up its failed attempts is served only a
// valid key this node holds in memory (KeyLookup.Cached: no Redis round
// trip, so the limit still spares Redis); anything else from it is 429.
// Partners behind one address with an attacker are not locked out.
func (s *Server) checkKey(w http.ResponseWriter, r *http.Request, ex *exchange) bool {
	st := ex.m.stage
	value, reason := apiKeyValue(r.Header)
	if reason == "" && s.keyFmt.BadChecksum(value) {
		reason = ReasonChecksum
	}
	blocked, wait := s.attempts.Blocked(ex.client)
	if blocked {
		if reason == "" && s.admitCached(ex, s.hasher.Hash(value)) {
			return true
		}
		ex.errType, ex.reason = ErrorTypeThrottled, levelKeyAttempts
		s.metrics.Throttled.WithLabelValues(st.apiID, st.name, levelKeyAttempts).Inc()
		setRetryAfter(w.Header(), wait)
		writeError(w, respThrottled)
		return false
	}
	if reason != "" {
		s.refuseKey(w, ex, reason)
		return false
	}
	rec, err := s.lookup.Lookup(r.Context(), s.hasher.Hash(value))
	if err != nil {
		ex.errType, ex.reason = ErrorTypeUnavailable, "key lookup: "+err.Error()
		writeUnavailable(w)
		return false
	}
	if rec == nil {
		s.refuseKey(w, ex, ReasonUnknown)
		return false
	}
	ex.keyID = rec.KeyID
	sp, reason := s.admits(rec, st)
	if reason != "" {
		s.refuseKey(w, ex, reason)
		return false
	}
	ex.rec, ex.sp, ex.planID = rec, sp, sp.id
	return true
}

// admits returns the plan of rec that covers st, or the reason rec is
// refused there: disabled, expired or replaced by a rotation (on Redis
// time), or no plan.
func (s *Server) admits(rec *plans.KeyRecord, st *stageConfig) (*stagePlan, string) {
	switch now := s.clock.Now(); {
	case !rec.Enabled:
		return nil, ReasonDisabled
	case rec.Expired(now):
		return nil, ReasonExpired
	case rec.Replaced(now):
		return nil, ReasonRotated
	}
	if sp := planFor(rec, st); sp != nil {
		return sp, ""
	}
	return nil, ReasonNoPlan
}

// admitCached sets ex's key and plan from the node's cached record of hash
// and reports true when admits would admit that record.
func (s *Server) admitCached(ex *exchange, hash string) bool {
	rec, ok := s.lookup.Cached(hash)
	if !ok || rec == nil {
		return false
	}
	sp, reason := s.admits(rec, ex.m.stage)
	if reason != "" {
		return false
	}
	ex.rec, ex.sp, ex.keyID, ex.planID = rec, sp, rec.KeyID, sp.id
	return true
}

// refuseKey writes the 403 of a failed key check and counts the failure
// against the client's address.
func (s *Server) refuseKey(w http.ResponseWriter, ex *exchange, reason string) {
	s.attempts.Fail(ex.client)
	ex.errType, ex.reason = ErrorTypeInvalidKey, reason
	writeError(w, respForbidden)
}

// apiKeyValue returns the x-api-key value (the header name is matched
// case-insensitively: net/http canonicalises it), trimmed, or the reason it
// is refused: missing, or malformed (two headers, or not [A-Za-z0-9]{20,128}).
func apiKeyValue(h http.Header) (value, reason string) {
	vs := h["X-Api-Key"]
	switch len(vs) {
	case 0:
		return "", ReasonMissing
	case 1:
	default:
		return "", ReasonMalformed
	}
	v := strings.TrimSpace(vs[0])
	if v == "" {
		return "", ReasonMissing
	}
	if !plans.ValidKeyValue(v) {
		return "", ReasonMalformed
	}
	return v, ""
}

// planFor returns the plan of rec that covers the stage: a key is in at
// most one plan per (api, stage) (a database constraint), so the first
// found is the one.
func planFor(rec *plans.KeyRecord, st *stageConfig) *stagePlan {
	for _, id := range rec.PlanIDs {
		if sp := st.plans[id]; sp != nil {
			return sp
		}
	}
	return nil
}
