package plans

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unicode"
)

// Rotation limits: the longest overlap (30 days), the longest idempotency
// token, and how long a token's answer is replayed.
const (
	MaxRotationOverlap   = 30 * 24 * time.Hour
	MaxIdempotencyToken  = 128
	RotationReplayWindow = 24 * time.Hour
)

// KeyRotation is one rotation of an API key's value (RotateApiKey): the
// new value's hash, until when the previous value still works, and, for a
// rotation with an idempotency token, the token's hash and the sealed new
// value that a repeat of the call answers with (docs/behaviour.md, "Key
// lifecycle").
type KeyRotation struct {
	KeyID   string
	NewHash string
	// Overlap is how long the previous value keeps working (0: it stops
	// at once); at most MaxRotationOverlap.
	Overlap time.Duration
	// TokenHash is RotationTokenHash of the idempotency token; "" for a
	// rotation without one.
	TokenHash string
	// SealedValue is the new value, sealed so that only a caller holding
	// the token (and TOLLGATE_SECRETS_KEY when set) can open it.
	SealedValue string
	// PreviousValueExpiresAt is when the previous value stops working
	// (whole seconds, UTC); set by the store.
	PreviousValueExpiresAt time.Time
	// Replayed is set by the store when a rotation with the same token
	// happened within RotationReplayWindow: SealedValue and
	// PreviousValueExpiresAt are then that rotation's, and nothing changed.
	Replayed bool
}

// ValidateRotation checks an overlap in seconds and an idempotency token:
// the overlap 0..MaxRotationOverlap, the token at most MaxIdempotencyToken
// printable characters ("" for none). Errors name overlapSeconds or
// idempotencyToken.
func ValidateRotation(overlapSeconds int64, token string) error {
	if overlapSeconds < 0 || overlapSeconds > int64(MaxRotationOverlap/time.Second) {
		return Invalid("overlapSeconds", "overlapSeconds must be 0 to %d", int64(MaxRotationOverlap/time.Second))
	}
	if len(token) > MaxIdempotencyToken {
		return Invalid("idempotencyToken", "idempotencyToken must be at most %d characters", MaxIdempotencyToken)
	}
	for _, r := range token {
		if !unicode.IsPrint(r) {
			return Invalid("idempotencyToken", "idempotencyToken must be printable characters")
		}
	}
	return nil
}

// RotationTokenHash is how an idempotency token is stored: its SHA-256
// (hex), never the token itself, which also opens the sealed value.
func RotationTokenHash(token string) string {
	sum := sha256.Sum256([]byte("tollgate rotation token\x00" + token))
	return hex.EncodeToString(sum[:])
}

// KeyRotator is the store's rotation (plans/postgres.DB.RotateApiKey).
type KeyRotator interface {
	RotateApiKey(ctx context.Context, rot KeyRotation) (KeyRotation, error)
}

// TokenSealer seals a value so that it opens only with a token (and the
// node's secrets key): *seal.Key, nil included.
type TokenSealer interface {
	SealUnder(token string, plain []byte, context string) string
	OpenUnder(token, v, context string) ([]byte, error)
}

// Rotator rotates API key values: the one procedure of the admin API and
// the developer portal. Format makes the new value, Pepper hashes it,
// Sealer seals it for repeats of a token: a *seal.Key, which seals under
// the token alone when it is nil (never a nil interface).
type Rotator struct {
	Store  KeyRotator
	Format KeyFormat
	Pepper []byte
	Sealer TokenSealer
}

// Rotate gives key keyID a new value whose previous one works for
// overlapSeconds; with a token, a repeat within RotationReplayWindow
// returns the first rotation's value and end and changes nothing
// (rot.Replayed). Errors: ValidateRotation's, the store's, and
// KindConflict when a repeat's stored value no longer opens (the secrets
// key changed).
func (r Rotator) Rotate(ctx context.Context, keyID string, overlapSeconds int64, token string) (value string, rot KeyRotation, err error) {
	if err := ValidateRotation(overlapSeconds, token); err != nil {
		return "", rot, err
	}
	value = r.Format.New()
	rot = KeyRotation{KeyID: keyID, NewHash: HashKey(value, r.Pepper), Overlap: time.Duration(overlapSeconds) * time.Second}
	if token != "" {
		rot.TokenHash = RotationTokenHash(token)
		rot.SealedValue = r.Sealer.SealUnder(token, []byte(value), rotationContext(keyID))
	}
	if rot, err = r.Store.RotateApiKey(ctx, rot); err != nil || !rot.Replayed {
		return value, rot, err
	}
	plain, err := r.Sealer.OpenUnder(token, rot.SealedValue, rotationContext(keyID))
	if err != nil {
		return "", rot, Conflict("the rotation made with this idempotencyToken can no longer be answered (%v); rotate again with a new idempotencyToken", err)
	}
	return string(plain), rot, nil
}

// rotationContext binds a sealed rotation answer to its key.
func rotationContext(keyID string) string { return "api key rotation " + keyID }
