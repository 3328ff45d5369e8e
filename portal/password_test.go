package portal

import (
	"strings"
	"testing"
)

func TestPasswordHashesVerify(t *testing.T) {
	t.Parallel()
	h := hashPassword("correct horse battery")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q: want a PHC string of argon2id with OWASP's parameters", h)
	}
	if h == hashPassword("correct horse battery") {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if !verifyPassword("correct horse battery", h) || verifyPassword("correct horse batterY", h) || verifyPassword("", h) {
		t.Error("verify: want the password accepted and others refused")
	}
	cheap := "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43) // parses, cannot match
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$AAAAAAAAAAAAAAAAAAAAAA",
		strings.Replace(h, "m=19456", "m=99999999", 1), strings.Replace(h, "v=19", "v=16", 1), cheap} {
		if verifyPassword("correct horse battery", bad) {
			t.Errorf("hash %q verified, want it refused", bad)
		}
	}
}

// FuzzParsePHC: any stored string parses without panic and within the
// bounds; what hashPassword writes always parses.
func FuzzParsePHC(f *testing.F) {
	f.Add("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5")
	f.Add("$argon2id$v=19$m=,t=2,p=1$$")
	f.Add("$$$$$")
	f.Fuzz(func(t *testing.T, s string) {
		if p, ok := parsePHC(s); ok && (p.memoryKiB > 256*1024 || p.passes > 16 || p.threads > 16 || len(p.key) > 64) {
			t.Fatalf("parsePHC(%q) = %+v, beyond the bounds", s, p)
		}
	})
}

func TestParsePHCOfANewHash(t *testing.T) {
	p, ok := parsePHC(hashPassword("x"))
	if !ok || p.memoryKiB != argonMemoryKiB || p.passes != argonTime || p.threads != argonThreads || len(p.salt) != argonSaltLen || len(p.key) != argonKeyLen {
		t.Fatalf("parsePHC(hashPassword) = %+v, %t", p, ok)
	}
}

// BenchmarkVerifyPassword times one sign-in's password check (docs/portal.md).
func BenchmarkVerifyPassword(b *testing.B) {
	h := hashPassword("correct horse battery staple")
	for b.Loop() {
		if !verifyPassword("correct horse battery staple", h) {
			b.Fatal("no match")
		}
	}
}
