package plans

import (
	"strconv"
	"time"
)

// Epoch is a UTC instant that marshals to JSON as whole epoch seconds, the
// timestamp format of the AWS restJson protocol (createdDate,
// lastUpdatedDate). The zero value marshals as 0.
type Epoch struct{ time.Time }

// MarshalJSON writes whole seconds since 1970-01-01T00:00:00Z.
func (e Epoch) MarshalJSON() ([]byte, error) {
	if e.IsZero() {
		return []byte("0"), nil
	}
	return strconv.AppendInt(nil, e.Unix(), 10), nil
}

// UnmarshalJSON reads epoch seconds, with or without a fraction.
func (e *Epoch) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return Invalid("date", "invalid timestamp %s", b)
	}
	sec := int64(f)
	e.Time = time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
	return nil
}
