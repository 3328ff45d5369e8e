package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// tokenPrefix starts a value sealed under a token (before k's own layer).
const tokenPrefix = "tgtoken1:"

// SealUnder seals plain so that it opens only for a caller holding token:
// AES-256-GCM under a key HKDF-SHA-256 derives from token (salted and
// bound to context), then under k as Seal does (a nil Key adds nothing).
// Stored with only a hash of the token, the value needs the token to open,
// and with k also the secret: a copy of the database alone opens nothing
// (unless the token is guessable and no secret is set).
func (k *Key) SealUnder(token string, plain []byte, context string) string {
	aead := tokenCipher(token, context)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	inner := tokenPrefix + base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(context)))
	return k.Seal([]byte(inner), context)
}

// OpenUnder returns the plain text of a value SealUnder made with the same
// token and context. Errors: Open's, and an error when the token or the
// context differ or the value is damaged.
func (k *Key) OpenUnder(token, v, context string) ([]byte, error) {
	outer, err := k.Open(v, context)
	if err != nil {
		return nil, err
	}
	enc, ok := strings.CutPrefix(string(outer), tokenPrefix)
	if !ok {
		return nil, errors.New("seal: not a value sealed under a token")
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	aead := tokenCipher(token, context)
	n := aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, errors.New("seal: malformed sealed value")
	}
	plain, err := aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return nil, errors.New("seal: the value does not open with this token")
	}
	return plain, nil
}

// tokenCipher is AES-256-GCM under the key HKDF-SHA-256 derives from
// token, salted with context.
func tokenCipher(token, context string) cipher.AEAD {
	key, err := hkdf.Key(sha256.New, []byte(token), []byte(context), "tollgate seal v1 token key", 32)
	if err != nil {
		panic(err) // only for lengths beyond 255 hash sizes
	}
	block, _ := aes.NewCipher(key) // a 32-byte key is always valid
	aead, _ := cipher.NewGCM(block)
	return aead
}
