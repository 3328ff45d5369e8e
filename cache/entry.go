package cache

import (
	"encoding/binary"
	"errors"
	"net/http"
	"time"
)

// MaxBody is the largest response body stored, in bytes: 1 MiB, inclusive.
const MaxBody = 1 << 20

// Entry is one stored response.
type Entry struct {
	// Status is the HTTP status (always 200 for stored entries).
	Status int
	// Header is the response header as the upstream sent it, minus the
	// headers the gateway owns or recomputes (see Storable's callers).
	Header http.Header
	// Body is the complete body, at most MaxBody bytes.
	Body []byte
	// Stored is when the entry was written (the filling node's clock,
	// millisecond precision).
	Stored time.Time
	// TTL is how long the entry is fresh after Stored (see Expires).
	TTL time.Duration
	// Keep is how long past its freshness the store keeps the entry, for
	// stale answers (Staleness.Keep); set for Fill, not part of the
	// stored form.
	Keep time.Duration
}

// Age is how long ago e was stored, never negative (nodes' clocks may
// differ a little).
func (e *Entry) Age(now time.Time) time.Duration {
	return max(now.Sub(e.Stored), 0)
}

// Fresh reports whether e may still be served at now as a hit.
func (e *Entry) Fresh(now time.Time) bool {
	return now.Before(e.Expires())
}

// Storable reports whether a response may be stored (docs/behaviour.md
// "Response cache"): status 200, a complete body of at most MaxBody bytes,
// and none of Set-Cookie, Cache-Control no-store or private, or Vary: *.
// Only 200 is stored: any other 2xx (a 206 Partial Content above all) is
// an answer to that one request, not the resource (RFC 9110 section 15.3).
func Storable(status int, h http.Header, bodyLen int, complete bool) bool {
	if status != http.StatusOK || !complete || bodyLen > MaxBody || Private(h) {
		return false
	}
	_, star := VaryNames(h)
	return !star
}

// Private reports whether a response is for its requester only: it sets
// a cookie or says Cache-Control private or no-store. Such a response is
// never stored, nor shared with other requests waiting for the same entry.
func Private(h http.Header) bool {
	return len(h.Values("Set-Cookie")) > 0 || Has(h, "private", "no-store")
}

// errCorrupt is returned by DecodeEntry for bytes it did not write.
var errCorrupt = errors.New("cache: corrupt entry")

// entryVersion is the first byte of an encoded entry.
const entryVersion = 1

// Encode returns e in the stored binary form: version, status, stored
// (Unix ms), TTL (ms), the header as (name, count, values...) and the
// body, every string length-prefixed. DecodeEntry reads it back.
func (e *Entry) Encode() []byte {
	n := 32 + len(e.Body)
	for k, vs := range e.Header {
		n += len(k) + 8
		for _, v := range vs {
			n += len(v) + 4
		}
	}
	b := make([]byte, 0, n)
	b = append(b, entryVersion)
	b = binary.AppendUvarint(b, uint64(e.Status))
	b = binary.AppendVarint(b, e.Stored.UnixMilli())
	b = binary.AppendUvarint(b, uint64(e.TTL.Milliseconds()))
	b = binary.AppendUvarint(b, uint64(len(e.Header)))
	for k, vs := range e.Header {
		b = appendField(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendField(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(e.Body)))
	return append(b, e.Body...)
}

// DecodeEntry parses the form written by Encode; bytes it did not write
// give an error.
func DecodeEntry(b []byte) (*Entry, error) {
	d := decoder{b: b}
	if len(b) == 0 || b[0] != entryVersion {
		return nil, errCorrupt
	}
	d.b = d.b[1:]
	e := &Entry{Status: int(d.uvarint())}
	e.Stored = time.UnixMilli(d.varint())
	e.TTL = time.Duration(d.uvarint()) * time.Millisecond
	nh := d.uvarint()
	if nh > uint64(len(d.b)) {
		return nil, errCorrupt
	}
	e.Header = make(http.Header, nh)
	for range nh {
		k := d.str()
		nv := d.uvarint()
		if nv > uint64(len(d.b)) {
			return nil, errCorrupt
		}
		vs := make([]string, nv)
		for i := range vs {
			vs[i] = d.str()
		}
		e.Header[k] = vs
	}
	e.Body = []byte(d.str())
	if d.err || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return e, nil
}

// decoder reads length-prefixed values; err is set on the first short read.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
