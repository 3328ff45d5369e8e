package admin

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"tollgate/plans"
	"tollgate/seal"
)

// rotateApiKeyInput is RotateApiKey's body: how long the previous value
// keeps working (seconds, 0..30 days; absent means 0) and an optional
// idempotency token.
type rotateApiKeyInput struct {
	OverlapSeconds   int64  `json:"overlapSeconds"`
	IdempotencyToken string `json:"idempotencyToken"`
}

// rotateApiKeyOutput is its answer; the value is shown here only.
type rotateApiKeyOutput struct {
	ID                     string `json:"id"`
	Value                  string `json:"value"`
	PreviousValueExpiresAt string `json:"previousValueExpiresAt"`
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
	if err := plans.ValidateRotation(in.OverlapSeconds, in.IdempotencyToken); err != nil {
		return err
	}
	overlap := time.Duration(in.OverlapSeconds) * time.Second
	value := s.keyFmt.New()
	rot := plans.KeyRotation{KeyID: id, NewHash: plans.HashKey(value, s.pepper), Overlap: overlap}
	if in.IdempotencyToken != "" {
		rot.TokenHash = plans.RotationTokenHash(in.IdempotencyToken)
		rot.SealedValue = sealRotatedValue(s.secrets, id, in.IdempotencyToken, value)
	}
	got, err := s.store.RotateApiKey(r.Context(), rot)
	if err != nil {
		return err
	}
	if got.Replayed {
		if value, err = openRotatedValue(s.secrets, id, in.IdempotencyToken, got.SealedValue); err != nil {
			s.log.Warn("admin: a rotation's answer does not open", "key", id, "err", err)
			return plans.Conflict("the rotation made with this idempotencyToken can no longer be answered (TOLLGATE_SECRETS_KEY changed?); rotate again with a new idempotencyToken")
		}
	} else {
		s.published(r.Context(), "RotateApiKey")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, rotateApiKeyOutput{ID: id, Value: value,
		PreviousValueExpiresAt: got.PreviousValueExpiresAt.UTC().Format(time.RFC3339)})
	return nil
}

// sealRotatedValue seals value with AES-256-GCM under a key derived from
// the idempotency token (HKDF-SHA-256, the key id as salt), so the stored
// form opens only for a caller presenting the token (only its hash is
// stored), and that again under secrets (TOLLGATE_SECRETS_KEY) when set,
// so that a reader of the database also needs that secret.
func sealRotatedValue(secrets *seal.Key, keyID, token, value string) string {
	aead := tokenCipher(keyID, token)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (Go 1.24+)
	inner := base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(value), []byte(keyID)))
	return secrets.Seal([]byte(inner), rotationContext(keyID))
}

// openRotatedValue is sealRotatedValue's inverse.
func openRotatedValue(secrets *seal.Key, keyID, token, stored string) (string, error) {
	inner, err := secrets.Open(stored, rotationContext(keyID))
	if err != nil {
		return "", err
	}
	raw, err := base64.StdEncoding.DecodeString(string(inner))
	aead := tokenCipher(keyID, token)
	n := aead.NonceSize()
	if err != nil || len(raw) < n {
		return "", errors.New("damaged sealed value")
	}
	plain, err := aead.Open(nil, raw[:n], raw[n:], []byte(keyID))
	if err != nil {
		return "", errors.New("the sealed value does not open with this token")
	}
	return string(plain), nil
}

// rotationContext binds a sealed rotation answer to its key (seal.Key's
// context).
func rotationContext(keyID string) string { return "api key rotation " + keyID }

// tokenCipher returns AES-256-GCM under the key HKDF-SHA-256 derives from
// token, salted with the key id.
func tokenCipher(keyID, token string) cipher.AEAD {
	key, err := hkdf.Key(sha256.New, []byte(token), []byte(keyID), "tollgate api key rotation v1", 32)
	if err != nil {
		panic(err) // only for lengths beyond 255 hash sizes
	}
	block, _ := aes.NewCipher(key) // a 32-byte key is always valid
	aead, _ := cipher.NewGCM(block)
	return aead
}
