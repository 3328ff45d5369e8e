package plans

import (
	"crypto/rand"
	"regexp"
)

const (
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	base62     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// ID lengths, as AWS: RestApi and ApiKey ids and the root resource have 10
// lowercase alphanumerics; usage plans, deployments and other resources 6.
const (
	LongIDLen  = 10
	ShortIDLen = 6
)

// NewID returns n random characters from [a-z0-9], from crypto/rand.
func NewID(n int) string { return randomString(n, lowerAlnum) }

// randomString draws n characters uniformly from alphabet (len ≤ 256) by
// rejection sampling, so no character is more likely than another.
func randomString(n int, alphabet string) string {
	limit := 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		_, _ = rand.Read(buf) // crypto/rand.Read never fails (Go 1.24+)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}

var idPattern = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// ValidID reports whether s has the shape of a tollgate id (lowercase
// alphanumerics). Handlers use it to answer 404 early for ids that cannot
// exist, never to accept one.
func ValidID(s string) bool { return idPattern.MatchString(s) }
