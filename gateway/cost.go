package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"tollgate/plans"
)

// maxCostBody is how much of a response body a json: settled cost reads
// (docs/cost.md): a longer body costs what tollgate:cost-if-missing says.
const maxCostBody = 1 << 20

// costTee keeps the start of a response body (up to maxCostBody) for a
// json: settled cost; over is set when the body was longer.
type costTee struct {
	buf  []byte
	over bool
}

func (t *costTee) write(b []byte) {
	if t.over {
		return
	}
	if len(t.buf)+len(b) > maxCostBody {
		t.over, t.buf = true, nil
		return
	}
	t.buf = append(t.buf, b...)
}

// settledCost returns the cost of a response of a plan with a settled
// cost c: the integer of c.Header in h, or the sum of the c.JSON fields of
// body (nil: not kept), and whether the response told it. A negative or
// fractional value counts rounded up and at least 0, capped at
// plans.MaxCost.
func settledCost(c *plans.Cost, h http.Header, tee *costTee) (int32, bool) {
	if c.Header != "" {
		v := strings.TrimSpace(h.Get(c.Header))
		f, err := strconv.ParseFloat(v, 64)
		if v == "" || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return units(f), true
	}
	if tee == nil || tee.over || len(c.JSON) == 0 {
		return 0, false
	}
	body := tee.buf
	if strings.EqualFold(h.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, false
		}
		body, err = io.ReadAll(io.LimitReader(zr, maxCostBody+1))
		if err != nil || len(body) > maxCostBody {
			return 0, false
		}
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return 0, false
	}
	sum, found := 0.0, false
	for _, path := range c.JSON {
		if f, ok := jsonNumber(doc, path); ok {
			sum, found = sum+f, true
		}
	}
	if !found {
		return 0, false
	}
	return units(sum), true
}

// jsonNumber returns the number at path (object keys) in doc.
func jsonNumber(doc any, path []string) (float64, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return 0, false
		}
		if doc, ok = m[k]; !ok {
			return 0, false
		}
	}
	n, ok := doc.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// units rounds a reported cost up to whole units within [0, MaxCost].
func units(f float64) int32 {
	return int32(min(max(math.Ceil(f), 0), plans.MaxCost))
}
