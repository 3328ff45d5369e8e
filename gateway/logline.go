package gateway

import (
	"io"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// AccessLog writes the access log's lines (one per request, "request")
// to a writer, encoded as log/slog's JSONHandler or TextHandler would
// encode the same record at level INFO, byte for byte, but from a pooled
// buffer: no allocation per line, one Write call each. Put a buffering
// writer behind it (cmd/tollgate's log writer). Safe for concurrent use
// when the writer is.
type AccessLog struct {
	w    io.Writer
	text bool
	pool sync.Pool // *lineEncoder
}

// NewAccessLog returns an access log writing to w, in slog's text format
// when text is true, else in its JSON format.
func NewAccessLog(w io.Writer, text bool) *AccessLog {
	return &AccessLog{w: w, text: text, pool: sync.Pool{New: func() any { return &lineEncoder{b: make([]byte, 0, 512)} }}}
}

// fieldSink receives the fields of an access-log line in order: the
// encoder of AccessLog, or the slog attributes of the Logger's line.
type fieldSink interface {
	str(key, v string)
	addr(key string, v netip.Addr)
	int(key string, v int64)
	float(key string, v float64)
}

// line writes one line at time t with the fields fill gives.
func (a *AccessLog) line(t time.Time, fill func(fieldSink)) {
	e := a.pool.Get().(*lineEncoder)
	e.text = a.text
	e.start(t)
	fill(e)
	e.end()
	_, _ = a.w.Write(e.b)
	if cap(e.b) <= 64<<10 {
		a.pool.Put(e)
	}
}

// lineEncoder builds one line in b.
type lineEncoder struct {
	b    []byte
	text bool
}

// start begins a line with time, level and message, as slog does.
func (e *lineEncoder) start(t time.Time) {
	t = t.Round(0)
	if e.text {
		e.b = append(e.b[:0], "time="...)
		e.b = appendRFC3339Millis(e.b, t)
		e.b = append(e.b, " level=INFO msg=request"...)
		return
	}
	e.b = append(e.b[:0], `{"time":"`...)
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	e.b = append(e.b, `","level":"INFO","msg":"request"`...)
}

// end closes the line.
func (e *lineEncoder) end() {
	if !e.text {
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '\n')
}

// key starts a field (keys are fixed names that need no escaping).
func (e *lineEncoder) key(k string) {
	if e.text {
		e.b = append(e.b, ' ')
		e.b = append(e.b, k...)
		e.b = append(e.b, '=')
		return
	}
	e.b = append(e.b, ',', '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *lineEncoder) str(k, v string) {
	e.key(k)
	switch {
	case !e.text:
		e.b = append(e.b, '"')
		e.b = appendJSONString(e.b, v)
		e.b = append(e.b, '"')
	case textNeedsQuoting(v):
		e.b = strconv.AppendQuote(e.b, v)
	default:
		e.b = append(e.b, v...)
	}
}

func (e *lineEncoder) addr(k string, v netip.Addr) {
	if !v.IsValid() || v.Zone() != "" { // "invalid IP"; a zone may need quoting
		e.str(k, v.String())
		return
	}
	e.key(k)
	if e.text {
		e.b = v.AppendTo(e.b)
		return
	}
	e.b = append(e.b, '"')
	e.b = v.AppendTo(e.b)
	e.b = append(e.b, '"')
}

func (e *lineEncoder) int(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *lineEncoder) float(k string, v float64) {
	e.key(k)
	if e.text {
		e.b = strconv.AppendFloat(e.b, v, 'g', -1, 64)
		return
	}
	e.b = appendJSONFloat(e.b, v)
}

// appendRFC3339Millis appends t as RFC 3339 with exactly three digits of
// milliseconds (slog's text time format).
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10) // RFC3339Nano trims trailing zeros
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendJSONFloat appends f as encoding/json writes a float64 (finite
// values; the access log has no others).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// jsonSafe reports the ASCII bytes a JSON string holds unescaped.
func jsonSafe(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }

// appendJSONString appends s escaped as slog's JSON handler escapes
// strings (invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// textNeedsQuoting reports whether slog's text handler quotes s.
func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != '\\' && (c == ' ' || c == '=' || !jsonSafe(c)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
