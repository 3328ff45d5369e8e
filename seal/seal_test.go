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
