// Package clientaddr finds the client address of an HTTP request
// (docs/behaviour.md, "Order of work": the connection's peer, or behind trusted proxies the
// nearest untrusted X-Forwarded-For hop) and limits failed attempts per
// address with a local token bucket. The gateway uses it for failed API
// key attempts and the admin API for failed authentication.
package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
)

// Peer returns the IP address of the connection's peer (r.RemoteAddr),
// unmapped from IPv4-in-IPv6, or the zero Addr when it cannot be parsed.
func Peer(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// PeerText is peer's text form (netip.Addr.String) for a peer that Peer
// found in r.RemoteAddr: RemoteAddr's own host part when it spells peer
// exactly so, which spares a string per request, else peer.String().
func PeerText(r *http.Request, peer netip.Addr) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		host = host[:i] // the port
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	var buf [64]byte
	if peer.IsValid() && string(peer.AppendTo(buf[:0])) == host {
		return host
	}
	return peer.String()
}

// Client returns the client address of a request whose peer is peer: the
// peer itself, or, when the peer is in trusted, the nearest
// X-Forwarded-For hop that is not (walking from the right; the leftmost
// hop when all are trusted). A malformed hop ends the walk at the last good
// address.
func Client(r *http.Request, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	if !Trusted(peer, trusted) {
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
			if !Trusted(client, trusted) {
				return client
			}
		}
	}
	return client
}

// Trusted reports whether a is inside one of the trusted prefixes.
func Trusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
