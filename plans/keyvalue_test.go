package plans

import (
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
	"testing"
)

func TestGeneratedValuesCarryPrefixAndChecksum(t *testing.T) {
	for _, prefix := range []string{"", "tg", "acme", "X1"} {
		f := KeyFormat{Prefix: prefix}
		seen := map[string]bool{}
		for range 500 {
			v := f.New()
			if !ValidKeyValue(v) || !strings.HasPrefix(v, f.prefix()) || seen[v] {
				t.Fatalf("prefix %q: New() = %q: want unique values of letters and digits starting with %q", prefix, v, f.prefix())
			}
			if !f.Generated(v) || f.BadChecksum(v) {
				t.Fatalf("prefix %q: New() = %q: Generated %t, BadChecksum %t; want true, false", prefix, v, f.Generated(v), f.BadChecksum(v))
			}
			seen[v] = true
		}
	}
	if n := len(NewKeyValue()); n != 44 {
		t.Errorf("default value length %d, want 44", n)
	}
}

func TestBadChecksumAllocatesNothing(t *testing.T) {
	v := NewKeyValue()
	if n := testing.AllocsPerRun(100, func() { KeyFormat{}.BadChecksum(v) }); n != 0 {
		t.Errorf("allocations: got %v, want 0", n)
	}
}

// Values of other shapes (chosen, imported, generated before prefixes,
// or under another prefix) are never refused by the checksum.
func TestOtherShapesAreNeverBadChecksum(t *testing.T) {
	f := KeyFormat{}
	old := randomString(40, base62)
	for _, v := range []string{old, "tg" + old, "tgABCDEFGHIJKLMNOPQRSTUVWXYZ", "tg" + strings.Repeat("a", 41),
		"tg" + strings.Repeat("a", 43), "xx" + strings.Repeat("a", 42), "tg" + strings.Repeat("a", 41) + "_",
		KeyFormat{Prefix: "acme"}.New()} {
		if f.BadChecksum(v) {
			t.Errorf("BadChecksum(%q) = true, want false (not the generated shape)", v)
		}
	}
	if v := "tg" + strings.Repeat("a", 42); !f.BadChecksum(v) {
		t.Errorf("BadChecksum(%q) = false, want true", v)
	}
}

func TestValidKeyPrefix(t *testing.T) {
	for p, ok := range map[string]bool{"tg": true, "a": true, "ACME2": true, strings.Repeat("a", 20): true,
		"": false, "t_g": false, "tg-": false, strings.Repeat("a", 21): false, "é": false} {
		if err := ValidKeyPrefix(p); (err == nil) != ok {
			t.Errorf("ValidKeyPrefix(%q) = %v, want ok %t", p, err, ok)
		}
	}
}

// refChecksum is the reference model: the CRC-32 as a base62 number.
func refChecksum(body string) string {
	n := uint64(crc32.ChecksumIEEE([]byte(body)))
	s := ""
	for range KeyChecksumLen {
		s = string(checksumDigits[n%62]) + s
		n /= 62
	}
	return s
}

var generatedShape = regexp.MustCompile(`^tg[A-Za-z0-9]{42}$`)

// FuzzKeyChecksum checks BadChecksum against the reference model on any
// input, and that every substitution of one character and every swap of
// two neighbours in a generated value is caught.
func FuzzKeyChecksum(f *testing.F) {
	f.Add(NewKeyValue(), 3, byte('x'))
	f.Add("tg"+strings.Repeat("A", 42), 0, byte('0'))
	f.Add("short", 1, byte('a'))
	f.Fuzz(func(t *testing.T, v string, at int, c byte) {
		kf := KeyFormat{}
		want := generatedShape.MatchString(v) && v[38:] != refChecksum(v[:38])
		if got := kf.BadChecksum(v); got != want {
			t.Fatalf("BadChecksum(%q) = %t, want %t", v, got, want)
		}
		good := kf.New()
		i := 2 + (at%42+42)%42 // past the prefix: a changed prefix is another shape
		if d := checksumDigits[int(c)%62]; d != good[i] {
			bad := good[:i] + string(d) + good[i+1:]
			if !kf.BadChecksum(bad) {
				t.Fatalf("substituting %q at %d of %q is not caught", d, i, good)
			}
		}
		if j := min(i+1, 43); i != j && good[i] != good[j] {
			swapped := good[:i] + string(good[j]) + string(good[i]) + good[j+1:]
			if !kf.BadChecksum(swapped) {
				t.Fatalf("swapping %d and %d of %q is not caught", i, j, good)
			}
		}
	})
}

func ExampleKeyFormat_BadChecksum() {
	f := KeyFormat{Prefix: "tg"}
	v := f.New()
	typo := v[:10] + flip(v[10]) + v[11:]
	fmt.Println(len(v), v[:2], f.BadChecksum(v), f.BadChecksum(typo), f.BadChecksum("myChosenValue0123456789"))
	// Output: 44 tg false true false
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// BenchmarkBadChecksum times the gateway's checksum check of a generated
// value (docs/behaviour.md, "Key lifecycle").
func BenchmarkBadChecksum(b *testing.B) {
	f, v := KeyFormat{}, NewKeyValue()
	for b.Loop() {
		if f.BadChecksum(v) {
			b.Fatal("a generated value failed its checksum")
		}
	}
}
