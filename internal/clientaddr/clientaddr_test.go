package clientaddr

import (
	"net/http"
	"net/netip"
	"testing"
	"time"
)

func TestClient(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer ignores XFF", "192.0.2.9:1234", []string{"203.0.113.1"}, "192.0.2.9"},
		{"trusted peer without XFF", "10.1.1.1:1234", nil, "10.1.1.1"},
		{"trusted peer, one hop", "10.1.1.1:1234", []string{"203.0.113.1"}, "203.0.113.1"},
		{"nearest untrusted hop", "10.1.1.1:1234", []string{"198.51.100.7, 203.0.113.1, 10.2.2.2"}, "203.0.113.1"},
		{"several headers", "10.1.1.1:1234", []string{"198.51.100.7", "203.0.113.1, 10.2.2.2"}, "203.0.113.1"},
		{"all trusted", "10.1.1.1:1234", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},
		{"garbage hop stops", "10.1.1.1:1234", []string{"junk, 10.2.2.2"}, "10.2.2.2"},
		{"ipv6 trusted peer", "[::1]:80", []string{"2001:db8::1"}, "2001:db8::1"},
		{"mapped ipv4", "[::ffff:192.0.2.9]:80", nil, "192.0.2.9"},
		{"no port", "192.0.2.9", nil, "192.0.2.9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://x/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := Client(r, Peer(r), trusted); got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPeerTextIsThePeersAddressText(t *testing.T) {
	t.Parallel()
	for _, remote := range []string{"192.0.2.9:1234", "192.0.2.9", "[::1]:80", "::1", "[2001:DB8::1]:80", "[2001:db8:0::1]:80",
		"[::ffff:192.0.2.9]:80", "[fe80::1%eth0]:80", "unix", ""} {
		t.Run(remote, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://x/", nil)
			r.RemoteAddr = remote
			peer := Peer(r)
			if got, want := PeerText(r, peer), peer.String(); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestPeerTextAllocatesNothingForAnIPv4Peer(t *testing.T) {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	r.RemoteAddr = "192.0.2.9:1234"
	peer := Peer(r)
	if n := testing.AllocsPerRun(100, func() { _ = PeerText(r, peer) }); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

func TestFailuresRefill(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const rate, burst = 20.0, 40.0
	f := NewFailures(rate, burst, 1000, func() time.Time { return now })
	addr := netip.MustParseAddr("192.0.2.1")
	for range int(burst) {
		if blocked, _ := f.Blocked(addr); blocked {
			t.Fatal("blocked before the burst was used")
		}
		f.Fail(addr)
	}
	if blocked, wait := f.Blocked(addr); !blocked || wait != time.Second/rate {
		t.Fatalf("after burst: got (%v, %v), want (true, %v)", blocked, wait, time.Second/rate)
	}
	if blocked, _ := f.Blocked(netip.MustParseAddr("192.0.2.2")); blocked {
		t.Errorf("other address: got blocked, want not")
	}
	now = now.Add(time.Second / rate)
	if blocked, _ := f.Blocked(addr); blocked {
		t.Errorf("after one refill interval: got blocked, want not")
	}
}

// A flood of distinct addresses keeps memory bounded, and an address
// that is still blocked is forgotten only when the shard is full of them.
func TestFailuresBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFailures(1, 1, 160, func() time.Time { return now })
	for i := range 100_000 {
		f.Fail(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if total := f.buckets.Len(); total > 160 {
		t.Fatalf("addresses remembered: %d, want at most 160", total)
	}
}
