// Package seal encrypts the secrets tollgate keeps on behalf of operators
// (today: the private keys of custom domain names' certificates) with a
// key derived from TOLLGATE_SECRETS_KEY, so PostgreSQL, its backups and the
// pushed config in Redis hold them encrypted (docs/operations.md,
// "Secrets").
//
// A sealed value is text: "tgseal1:" + the key's 8-hex-digit id + ":" +
// base64 (standard, padded) of a 12-byte random nonce followed by the
// AES-256-GCM ciphertext and tag. The AES key is HKDF-SHA-256 of the
// secret (RFC 5869; crypto/hkdf) with a fixed salt and an info string
// naming its purpose; the key id is another HKDF output of the same
// secret, so a node holding a different secret says so instead of
// failing to authenticate. Each value is bound (as GCM's additional data)
// to a context string naming what it is, so a sealed value copied into
// another record does not open.
//
// A value that does not start with the prefix is plain text, stored as
// given when no secret is configured: Open returns it unchanged.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "tgseal1:"

// MinSecretLen is the shortest TOLLGATE_SECRETS_KEY accepted, in bytes:
// HKDF does not stretch a weak secret, so it must be random (for example
// `openssl rand -base64 32`).
const MinSecretLen = 32

// HKDF parameters: fixed, so every node derives the same key.
const (
	salt    = "tollgate secrets"
	infoKey = "tollgate seal v1 aes-256-gcm key"
	infoID  = "tollgate seal v1 key id"
)

// ErrNoKey is Open's error for a sealed value when no key is configured.
var ErrNoKey = errors.New("seal: the value is encrypted with TOLLGATE_SECRETS_KEY, which this node does not have")

// Key seals and opens values. A nil *Key seals nothing: Seal returns the
// value as given and Open opens only plain values.
type Key struct {
	aead cipher.AEAD
	id   string
}

// NewKey derives a Key from secret, which must be at least MinSecretLen
// bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("seal: the secret must be at least %d bytes, got %d", MinSecretLen, len(secret))
	}
	aesKey, err := hkdf.Key(sha256.New, secret, []byte(salt), infoKey, 32)
	if err != nil {
		return nil, fmt.Errorf("seal: derive key: %w", err)
	}
	id, err := hkdf.Key(sha256.New, secret, []byte(salt), infoID, 4)
	if err != nil {
		return nil, fmt.Errorf("seal: derive key id: %w", err)
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Key{aead: aead, id: hex.EncodeToString(id)}, nil
}

// ID is the key's id, as written in the values it seals: it tells keys
// apart without revealing them.
func (k *Key) ID() string {
	if k == nil {
		return ""
	}
	return k.id
}

// Seal encrypts plain bound to context. With a nil Key it returns plain
// unchanged.
func (k *Key) Seal(plain []byte, context string) string {
	if k == nil {
		return string(plain)
	}
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	sealed := k.aead.Seal(nonce, nonce, plain, []byte(context))
	return Prefix + k.id + ":" + base64.StdEncoding.EncodeToString(sealed)
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Open returns the plain text of v, a value Seal made with the same
// context, or v itself when it is not sealed. Errors: ErrNoKey when v is
// sealed and k is nil; an error naming both key ids when v was sealed with
// another secret; an error when v is damaged or was sealed for another
// context.
func (k *Key) Open(v, context string) ([]byte, error) {
	rest, ok := strings.CutPrefix(v, Prefix)
	if !ok {
		return []byte(v), nil
	}
	if k == nil {
		return nil, ErrNoKey
	}
	id, data, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, errors.New("seal: malformed sealed value")
	}
	if id != k.id {
		return nil, fmt.Errorf("seal: the value is sealed with key %s, this node's TOLLGATE_SECRETS_KEY is key %s", id, k.id)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) < k.aead.NonceSize() {
		return nil, errors.New("seal: malformed sealed value")
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return nil, errors.New("seal: the value does not open: damaged, or sealed for another record")
	}
	return plain, nil
}
