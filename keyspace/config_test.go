package keyspace

import (
	"strings"
	"testing"
)

func TestKeyNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"snapshot", Space{}.Snapshot(), "tg:config:snapshot"},
		{"watermark", Space{Prefix: "tg"}.Version(), "tg:config:version"},
		{"stream", Space{}.Stream(), "tg:config:changes"},
		{"key record", Space{}.KeyRecord("ab12"), "tg:key:{ab12}"},
		{"cache generation", Space{}.CacheGeneration("a1b2c3d4e5", "prod"), "tg:cache:gen:{a1b2c3d4e5:prod}"},
		{"test prefix", Space{Prefix: "t0123456789ab"}.KeyRecord("ff"), "t0123456789ab:key:{ff}"},
		{"cache entry", Space{}.CacheEntry("ab"), "tg:cache:e:ab"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

// FuzzKeyRecordKey checks that the hash is the record key's Redis Cluster
// hash tag and that distinct hashes never share a key.
func FuzzKeyRecordKey(f *testing.F) {
	f.Add("tg", "ab12", "ab13")
	f.Add("t1", "", "x")
	f.Fuzz(func(t *testing.T, prefix, h1, h2 string) {
		if strings.ContainsAny(prefix+h1+h2, "{}") {
			t.Skip("braces are not in hex hashes or prefixes")
		}
		sp := Space{Prefix: prefix}
		k1 := sp.KeyRecord(h1)
		open, end := strings.IndexByte(k1, '{'), strings.IndexByte(k1, '}')
		if got := k1[open+1 : end]; got != h1 {
			t.Errorf("hash tag of %q: got %q, want %q", k1, got, h1)
		}
		if h1 != h2 && k1 == sp.KeyRecord(h2) {
			t.Errorf("hashes %q and %q share key %q", h1, h2, k1)
		}
	})
}
