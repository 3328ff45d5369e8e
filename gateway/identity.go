package gateway

import (
	"net/http"
	"strings"
)

// Request headers through which the gateway vouches for a caller, as
// normalised by identityName. A client may not send any of them in a
// spelling other than the canonical one (see stripSpoofed).
var vouchingHeaders = map[string]bool{
	"x-forwarded-for":   true,
	"x-forwarded-host":  true,
	"x-forwarded-proto": true,
	"forwarded":         true,
	"x-real-ip":         true,
	"x-api-key":         true,
}

// tollgatePrefix is the gateway's own header namespace (normalised): no
// client-sent header in it reaches an upstream.
const tollgatePrefix = "x-tollgate-"

// headerRealIP carries the client address the gateway determined.
const headerRealIP = "X-Real-Ip"

// stripSpoofed deletes from a client's request headers every header an
// upstream could take for the gateway's word about who is calling:
//   - any header in the X-Tollgate-* namespace, in any spelling (serveAPI
//     then sets X-Tollgate-Api-Key-Id itself for a keyed method);
//   - X-Real-Ip (rewrite sets it to the client address);
//   - X-Forwarded-For, -Host, -Proto, Forwarded and X-Api-Key spelt with
//     "_" for "-": CGI and WSGI upstreams (RFC 3875 section 4.1.18) turn
//     both spellings into the same HTTP_X_FORWARDED_FOR variable. The
//     canonical spellings are handled where they belong: ReverseProxy
//     drops Forwarded and X-Forwarded-Host/-Proto and rewrite sets its own,
//     X-Forwarded-For is appended to, X-Api-Key is removed by rewrite.
//
// Every other client header reaches the upstream as sent
// (docs/behaviour.md "Integrations").
func stripSpoofed(h http.Header) {
	delete(h, headerRealIP)
	for name := range h {
		underscore := strings.IndexByte(name, '_') >= 0
		if !underscore && !hasPrefixFold(name, tollgatePrefix) {
			continue
		}
		n := identityName(name)
		if strings.HasPrefix(n, tollgatePrefix) || underscore && vouchingHeaders[n] {
			delete(h, name)
		}
	}
}

// identityName lowercases a header name and reads "_" as "-".
func identityName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// hasPrefixFold reports whether s begins with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
