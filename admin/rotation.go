package admin

import (
	"net/http"
	"time"

	"tollgate/plans"
)

// rotateApiKeyInput is RotateApiKey's body: how long the previous value
// keeps working (seconds, 0..30 days; absent means 0) and an optional
// idempotency token.
type rotateApiKeyInput struct {
	OverlapSeconds   int64  `json:"overlapSeconds"`
	IdempotencyToken string `json:"idempotencyToken"`
}

// RotateApiKeyOutput is RotateApiKey's answer; the value is shown here
// only (and to a repeat of the same token).
type RotateApiKeyOutput struct {
	ID                     string `json:"id"`
	Value                  string `json:"value"`
	PreviousValueExpiresAt string `json:"previousValueExpiresAt"` // RFC 3339 UTC
}

// rotateApiKey: POST /apikeys/{id}/rotate → 200 {id, value,
// previousValueExpiresAt}: the key gets a new generated value and keeps
// its id, plans, customer, tags and counters; the previous value works
// until previousValueExpiresAt. The same idempotencyToken on the same key
// within a day answers the same, value included, and changes nothing
// (docs/behaviour.md, "Key lifecycle").
func (s *Server) rotateApiKey(w http.ResponseWriter, r *http.Request) error {
	var in rotateApiKeyInput
	if err := decode(r, &in); err != nil {
		return err
	}
	id := param(r, "apiKey")
	rotator := plans.Rotator{Store: s.store, Format: s.keyFmt, Pepper: s.pepper, Sealer: s.secrets}
	value, rot, err := rotator.Rotate(r.Context(), id, in.OverlapSeconds, in.IdempotencyToken)
	if err != nil {
		return err
	}
	if !rot.Replayed {
		s.published(r.Context(), "RotateApiKey")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, RotateApiKeyOutput{ID: id, Value: value,
		PreviousValueExpiresAt: rot.PreviousValueExpiresAt.UTC().Format(time.RFC3339)})
	return nil
}
