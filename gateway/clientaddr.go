package gateway

import (
	"net/http"
	"net/netip"
	"strings"
)

// peerAddr returns the IP address of the connection's peer (r.RemoteAddr),
// unmapped from IPv4-in-IPv6, or the zero Addr when it cannot be parsed.
func peerAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// clientAddr returns the client address of DESIGN.md 4.2: the peer, or,
// when the peer is a trusted proxy, the nearest X-Forwarded-For hop that is
// not trusted (walking from the right; the leftmost hop when all are
// trusted). A malformed hop ends the walk at the last good address.
func clientAddr(r *http.Request, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	if !isTrusted(peer, trusted) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		list := hops[i]
		for list != "" {
			var hop string
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				hop, list = list[j+1:], list[:j]
			} else {
				hop, list = list, ""
			}
			a, err := netip.ParseAddr(strings.TrimSpace(hop))
			if err != nil {
				return client
			}
			client = a.Unmap()
			if !isTrusted(client, trusted) {
				return client
			}
		}
	}
	return client
}

// isTrusted reports whether a is inside one of the trusted prefixes.
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
