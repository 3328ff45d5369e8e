package plans

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// DefaultKeyPrefix starts every generated API key value unless
// TOLLGATE_KEY_PREFIX says otherwise.
const DefaultKeyPrefix = "tg"

// Parts of a generated key value after its prefix: KeyRandomLen random
// base62 characters (about 214 bits), then KeyChecksumLen characters of
// checksum. With any prefix a generated value is longer than the 40
// characters of values generated before prefixes existed (and of AWS's),
// so those are never taken for generated ones.
const (
	KeyRandomLen   = 36
	KeyChecksumLen = 6
	maxKeyPrefix   = 20
)

// KeyFormat is the shape of generated API key values: Prefix, then
// KeyRandomLen random letters and digits, then the CRC-32 (IEEE) of
// prefix and random part written as KeyChecksumLen base62 digits, most
// significant first, digits 0-9A-Za-z (the scheme of GitHub's tokens,
// without the underscore that AWS's value rules forbid). A secret
// scanner recognises the prefix and checks the checksum offline; the
// gateway refuses a value of this shape whose checksum does not match
// without any lookup. The zero value uses DefaultKeyPrefix.
type KeyFormat struct {
	Prefix string
}

func (f KeyFormat) prefix() string {
	if f.Prefix == "" {
		return DefaultKeyPrefix
	}
	return f.Prefix
}

// ValidKeyPrefix checks a TOLLGATE_KEY_PREFIX: 1..20 letters and digits.
func ValidKeyPrefix(p string) error {
	if len(p) < 1 || len(p) > maxKeyPrefix || !alnum(p) {
		return fmt.Errorf("key prefix %q must be 1 to %d letters and digits", p, maxKeyPrefix)
	}
	return nil
}

// New returns a new random key value of this format, from crypto/rand.
func (f KeyFormat) New() string {
	body := f.prefix() + randomString(KeyRandomLen, base62)
	sum := keyChecksum(body)
	return body + string(sum[:])
}

// NewKeyValue returns a new value of the default format (KeyFormat{}).
func NewKeyValue() string { return KeyFormat{}.New() }

// Generated reports whether v has the shape of a generated value: the
// prefix followed by exactly KeyRandomLen+KeyChecksumLen letters and
// digits. It says nothing of the checksum.
func (f KeyFormat) Generated(v string) bool {
	p := f.prefix()
	return len(v) == len(p)+KeyRandomLen+KeyChecksumLen && strings.HasPrefix(v, p) && alnum(v)
}

// BadChecksum reports whether v has the shape of a generated value but
// not its checksum: a mistyped or made-up key, refused without a lookup.
// Values of any other shape (imported, chosen) are never bad.
func (f KeyFormat) BadChecksum(v string) bool {
	if !f.Generated(v) {
		return false
	}
	cut := len(v) - KeyChecksumLen
	sum := keyChecksum(v[:cut])
	return v[cut:] != string(sum[:])
}

// checksumDigits are the base62 digits of a checksum, in value order.
const checksumDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// keyChecksum returns the CRC-32 (IEEE) of body as KeyChecksumLen base62
// digits (62^6 > 2^32, so every checksum has one spelling). The CRC is
// taken over the string in place, with hash/crc32's table: its functions
// take a []byte, and that copy of the key was an allocation per request.
func keyChecksum(body string) [KeyChecksumLen]byte {
	crc := ^uint32(0)
	for i := 0; i < len(body); i++ {
		crc = crc32.IEEETable[byte(crc)^body[i]] ^ crc>>8
	}
	n := ^crc
	var out [KeyChecksumLen]byte
	for i := KeyChecksumLen - 1; i >= 0; i-- {
		out[i] = checksumDigits[n%62]
		n /= 62
	}
	return out
}

// alnum reports whether s holds only ASCII letters and digits.
func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
