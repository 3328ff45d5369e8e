package keyspace

import (
	"fmt"
	"strings"
	"testing"
)

func TestKeysNames(t *testing.T) {
	t.Parallel()
	var zero Space
	custom := Space{Prefix: "t1"}
	cases := []struct {
		name, got, want string
	}{
		{"plan bucket", zero.PlanBucket("abcdefghij", "p1q2r3"), "tg:{k:abcdefghij}:tb:p1q2r3"},
		{"plan method bucket", zero.PlanMethodBucket("abcdefghij", "p1q2r3", "api0123456", "prod", "GET", "/pets/{petId}"),
			"tg:{k:abcdefghij}:tb:p1q2r3:api0123456:prod:GET/pets/{petId}"},
		{"root path", zero.PlanMethodBucket("k", "p", "a", "s-1_x", "ANY", "/"), "tg:{k:k}:tb:p:a:s-1_x:ANY/"},
		{"quota", zero.Quota("abcdefghij", "p1q2r3"), "tg:{k:abcdefghij}:q:p1q2r3"},
		{"usage", zero.Usage("abcdefghij", "p1q2r3"), "tg:{k:abcdefghij}:u:p1q2r3"},
		{"stage bucket", zero.StageBucket("api0123456", "prod", "POST", "/items"), "tg:{s:api0123456:prod}:tb:POST/items"},
		{"account bucket", zero.AccountBucket(), "tg:{acct}:tb"},
		{"prefix", custom.AccountBucket(), "t1:{acct}:tb"},
		{"prefix per key", custom.Quota("k", "p"), "t1:{k:k}:q:p"},
		{"escaped key id keeps the tag", zero.PlanBucket("a}b{c", "p:q"), "tg:{k:a%7Db%7Bc}:tb:p%3Aq"},
		{"escaped percent", zero.Usage("a%3A", "p"), "tg:{k:a%253A}:u:p"},
		{"method with a slash", zero.StageBucket("a", "s", "G/T", "/x"), "tg:{s:a:s}:tb:G%2FT/x"},
		{"path without a slash", zero.StageBucket("a", "s", "GET", "x%"), "tg:{s:a:s}:tb:GET%-x%25"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestKeysEscapeDoesNotAllocateForValidIDs(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { _ = escapeID("abcdefghij") })
	if n != 0 {
		t.Fatalf("escapeID of a valid id: got %v allocations, want 0", n)
	}
}

// keyInput is one set of builder arguments.
type keyInput struct{ key, plan, api, stage, method, path string }

// names returns every family's name for in, labelled by family.
func (in keyInput) names(k Space) map[string]string {
	return map[string]string{
		"plan":   k.PlanBucket(in.key, in.plan),
		"method": k.PlanMethodBucket(in.key, in.plan, in.api, in.stage, in.method, in.path),
		"quota":  k.Quota(in.key, in.plan),
		"usage":  k.Usage(in.key, in.plan),
		"stage":  k.StageBucket(in.api, in.stage, in.method, in.path),
	}
}

// args returns which arguments each family depends on.
func (in keyInput) args(family string) string {
	switch family {
	case "method":
		return strings.Join([]string{in.key, in.plan, in.api, in.stage, in.method, in.path}, "\x00")
	case "stage":
		return strings.Join([]string{in.api, in.stage, in.method, in.path}, "\x00")
	default:
		return in.key + "\x00" + in.plan
	}
}

func FuzzKeys(f *testing.F) {
	f.Add("abcdefghij", "p1q2r3", "api0123456", "prod", "GET", "/pets", "abcdefghij", "p1q2r3", "api0123456", "prod", "GET", "/pets/x")
	f.Add("a", "b:c", "x", "y", "GE", "T/x", "a:b", "c", "x", "y", "GET", "/x")
	f.Add("k}", "p", "a", "s", "GET", "", "k", "}p", "a:s", "", "GET", "%-")
	f.Add("k", "p", "a", "s", "%", "/", "k", "p", "a", "s", "%25", "/")
	f.Fuzz(func(t *testing.T, k1, p1, a1, s1, m1, x1, k2, p2, a2, s2, m2, x2 string) {
		keys := Space{Prefix: "tg"}
		in1 := keyInput{k1, p1, a1, s1, m1, x1}
		in2 := keyInput{k2, p2, a2, s2, m2, x2}
		n1, n2 := in1.names(keys), in2.names(keys)
		for fam1, name1 := range n1 {
			for fam2, name2 := range n2 {
				same := fam1 == fam2 && in1.args(fam1) == in2.args(fam2)
				if (name1 == name2) != same {
					t.Fatalf("%s%+v → %q and %s%+v → %q: equal names %v, want %v", fam1, in1, name1, fam2, in2, name2, name1 == name2, same)
				}
			}
		}
		for _, in := range []keyInput{in1, in2} {
			names := in.names(keys)
			for _, fam := range []string{"plan", "method", "quota", "usage"} {
				if got, want := HashTag(names[fam]), "k:"+escapeID(in.key); got != want {
					t.Fatalf("%s %q: hash tag got %q, want %q", fam, names[fam], got, want)
				}
			}
			if got, want := HashTag(names["stage"]), "s:"+escapeID(in.api)+":"+escapeID(in.stage); got != want {
				t.Fatalf("stage %q: hash tag got %q, want %q", names["stage"], got, want)
			}
		}
		if got := HashTag(keys.AccountBucket()); got != "acct" {
			t.Fatalf("account hash tag: got %q, want %q", got, "acct")
		}
	})
}

// A prefix with a brace would take the place of every name's hash tag:
// refused; the default and ordinary prefixes pass.
func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefix string
		ok     bool
	}{{"", true}, {"tg", true}, {"prod:eu-1", true}, {"t{x}", false}, {"{", false}, {"a}", false}} {
		err := CheckPrefix(c.prefix)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", c.prefix))) {
			t.Errorf("CheckPrefix(%q): got %v, want ok=%v (an error naming the prefix)", c.prefix, err, c.ok)
		}
	}
}
