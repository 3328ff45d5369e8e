package portal

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of new password hashes: OWASP's minimum (19 MiB, two
// passes, one lane), so a hash costs tens of milliseconds and 19 MiB.
// Stored hashes carry their own parameters (PHC string format), so raising
// these later keeps old passwords working.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// hashSlots bounds the password hashes computed at once, so a burst of
// sign-ins costs at most hashSlots × 19 MiB.
var hashSlots = make(chan struct{}, 4)

// hashPassword returns the PHC string of password under a new random salt:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash> (unpadded base64).
func hashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	key := argonKey(password, salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verifyPassword reports whether password matches the PHC string hash (in
// constant time). A malformed hash never matches.
func verifyPassword(password, hash string) bool {
	p, ok := parsePHC(hash)
	if !ok {
		return false
	}
	got := argonKey(password, p.salt, p.passes, p.memoryKiB, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(got, p.key) == 1
}

// phc is a parsed argon2id PHC string.
type phc struct {
	memoryKiB, passes uint32
	threads           uint8
	salt, key         []byte
}

// parsePHC reads "$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>"
// (unpadded base64), within bounds that keep one verification affordable
// (at most 256 MiB, 16 passes, 16 lanes; a key of 16 to 64 bytes).
func parsePHC(hash string) (phc, bool) {
	var p phc
	var version int
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, false
	}
	if n, err := fmt.Sscanf(parts[2], "v=%d", &version); n != 1 || err != nil || version != argon2.Version {
		return p, false
	}
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memoryKiB, &p.passes, &p.threads); n != 3 || err != nil ||
		p.memoryKiB < 8 || p.memoryKiB > 256*1024 || p.passes < 1 || p.passes > 16 || p.threads < 1 || p.threads > 16 {
		return p, false
	}
	var err1, err2 error
	p.salt, err1 = base64.RawStdEncoding.DecodeString(parts[4])
	p.key, err2 = base64.RawStdEncoding.DecodeString(parts[5])
	if errors.Join(err1, err2) != nil || len(p.salt) < 8 || len(p.key) < 16 || len(p.key) > 64 {
		return p, false
	}
	return p, true
}

// argonKey runs argon2id within a hash slot.
func argonKey(password string, salt []byte, passes, memoryKiB uint32, threads uint8, keyLen uint32) []byte {
	hashSlots <- struct{}{}
	defer func() { <-hashSlots }()
	return argon2.IDKey([]byte(password), salt, passes, memoryKiB, threads, keyLen)
}

// dummyHash is verified against when an email has no account, so that an
// unknown email takes as long to refuse as a wrong password.
var dummyHash = sync.OnceValue(func() string { return hashPassword("tollgate portal: no such account") })
