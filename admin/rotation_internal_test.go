package admin

import (
	"strings"
	"testing"

	"tollgate/seal"
)

// A rotation's stored value opens only with its token and key id, and
// with the secrets key it was sealed under; it never holds the value or
// the token in clear.
func TestRotatedValueOpensOnlyWithItsToken(t *testing.T) {
	const value, key, token = "tgAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd", "key0000001", "3f1c-token"
	a, err := seal.NewKey([]byte("rotation-test-secrets-key-a-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seal.NewKey([]byte("rotation-test-secrets-key-b-0123456789"))
	for _, secrets := range []*seal.Key{nil, a} {
		stored := sealRotatedValue(secrets, key, token, value)
		if strings.Contains(stored, value) || strings.Contains(stored, token) {
			t.Fatalf("stored form %q holds the value or the token", stored)
		}
		if got, err := openRotatedValue(secrets, key, token, stored); err != nil || got != value {
			t.Fatalf("open: got %q, %v; want the value", got, err)
		}
		cases := map[string]func() (string, error){
			"other token": func() (string, error) { return openRotatedValue(secrets, key, token+"x", stored) },
			"other key":   func() (string, error) { return openRotatedValue(secrets, "key0000002", token, stored) },
			"damaged":     func() (string, error) { return openRotatedValue(secrets, key, token, stored[:len(stored)-4]) },
		}
		if secrets != nil {
			cases["other secrets key"] = func() (string, error) { return openRotatedValue(b, key, token, stored) }
			cases["no secrets key"] = func() (string, error) { return openRotatedValue(nil, key, token, stored) }
		}
		for name, open := range cases {
			if got, err := open(); err == nil {
				t.Errorf("secrets %s, %s: opened to %q, want an error", secrets.ID(), name, got)
			}
		}
	}
}
