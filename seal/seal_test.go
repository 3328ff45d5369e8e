package seal_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"tollgate/seal"
)

func mustKey(t testing.TB, secret string) *seal.Key {
	t.Helper()
	k, err := seal.NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	secretA = "0123456789abcdef0123456789abcdef-a"
	secretB = "0123456789abcdef0123456789abcdef-b"
)

func TestSealedValueOpensWithTheSameSecretAndContext(t *testing.T) {
	plain := []byte("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n")
	sealed := mustKey(t, secretA).Seal(plain, "ctx-1")
	if !seal.IsSealed(sealed) || strings.Contains(sealed, "PRIVATE KEY") {
		t.Fatalf("sealed value %q is not sealed or shows the plain text", sealed)
	}
	got, err := mustKey(t, secretA).Open(sealed, "ctx-1") // a key derived again, as another node does
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open: got %q, %v; want the plain text", got, err)
	}
	if again := mustKey(t, secretA).Seal(plain, "ctx-1"); again == sealed {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
}

func TestSealedValueRefusesAnotherContextSecretOrDamage(t *testing.T) {
	k := mustKey(t, secretA)
	sealed := k.Seal([]byte("key"), "domain a")
	if _, err := k.Open(sealed, "domain b"); err == nil {
		t.Error("opened under another context")
	}
	_, err := mustKey(t, secretB).Open(sealed, "domain a")
	if err == nil || !strings.Contains(err.Error(), k.ID()) {
		t.Errorf("another secret: got %v, want an error naming key %s", err, k.ID())
	}
	damaged := sealed[:len(sealed)-4] + "AAA="
	if _, err := k.Open(damaged, "domain a"); err == nil {
		t.Error("opened a damaged value")
	}
	var none *seal.Key
	if _, err := none.Open(sealed, "domain a"); !errors.Is(err, seal.ErrNoKey) {
		t.Errorf("no key: got %v, want ErrNoKey", err)
	}
}

func TestWithoutASecretValuesAreKeptAsGiven(t *testing.T) {
	var none *seal.Key
	if got := none.Seal([]byte("plain"), "c"); got != "plain" {
		t.Errorf("nil key Seal: got %q, want the value as given", got)
	}
	for _, k := range []*seal.Key{none, mustKey(t, secretA)} {
		if got, err := k.Open("plain", "c"); err != nil || string(got) != "plain" {
			t.Errorf("Open of a plain value: got %q, %v", got, err)
		}
	}
}

func TestShortSecretIsRefused(t *testing.T) {
	if _, err := seal.NewKey([]byte("short")); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
}

func FuzzOpenNeverPanics(f *testing.F) {
	k := mustKey(f, secretA)
	f.Add(k.Seal([]byte("x"), "c"))
	f.Add(seal.Prefix + "zz:")
	f.Add(seal.Prefix + k.ID() + ":AAAA")
	f.Fuzz(func(t *testing.T, v string) {
		plain, err := k.Open(v, "c")
		if err == nil && seal.IsSealed(v) && string(plain) != "x" {
			t.Fatalf("a forged value %q opened to %q", v, plain)
		}
	})
}

// A value sealed under a token opens only with that token and context,
// and with the secret it was sealed under; it never shows the value or
// the token.
func TestSealUnderOpensOnlyWithItsToken(t *testing.T) {
	const value, token, ctx = "tgAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd", "3f1c-token", "api key rotation key0000001"
	a, b := mustKey(t, secretA), mustKey(t, secretB)
	for _, k := range []*seal.Key{nil, a} {
		stored := k.SealUnder(token, []byte(value), ctx)
		if strings.Contains(stored, value) || strings.Contains(stored, token) || seal.IsSealed(stored) != (k != nil) {
			t.Fatalf("key %q: stored form %q shows the value or the token, or is not sealed by the key", k.ID(), stored)
		}
		if got, err := k.OpenUnder(token, stored, ctx); err != nil || string(got) != value {
			t.Fatalf("key %q: open got %q, %v; want the value", k.ID(), got, err)
		}
		bad := map[string]func() ([]byte, error){
			"other token":   func() ([]byte, error) { return k.OpenUnder(token+"x", stored, ctx) },
			"other context": func() ([]byte, error) { return k.OpenUnder(token, stored, ctx+"2") },
			"damaged":       func() ([]byte, error) { return k.OpenUnder(token, stored[:len(stored)-4], ctx) },
			"not a token":   func() ([]byte, error) { return k.OpenUnder(token, k.Seal([]byte(value), ctx), ctx) },
		}
		if k != nil {
			bad["other secret"] = func() ([]byte, error) { return b.OpenUnder(token, stored, ctx) }
			bad["no secret"] = func() ([]byte, error) { var none *seal.Key; return none.OpenUnder(token, stored, ctx) }
		}
		for name, open := range bad {
			if got, err := open(); err == nil {
				t.Errorf("key %q, %s: opened to %q, want an error", k.ID(), name, got)
			}
		}
	}
}
