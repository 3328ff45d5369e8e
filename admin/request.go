package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"tollgate/internal/reqbody"
	"tollgate/plans"
)

// Paging defaults and bounds of list operations (query "limit").
const (
	DefaultPageLimit = 25
	MaxPageLimit     = 500
)

// limitBody bounds every request body at MaxBodyBytes (a Content-Length
// above it is refused up front, a longer body fails when read) and in
// time (package reqbody: a body that arrives too slowly fails when read,
// and is answered 408).
func (s *Server) limitBody(next http.Handler) http.Handler {
	limits := s.bodyLimits
	if limits == (reqbody.Limits{}) {
		limits = reqbody.DefaultLimits
	}
	timed := reqbody.Handler(next, limits)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			s.writeError(w, r, errBodyTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		timed.ServeHTTP(w, r)
	})
}

var errBodyTooLarge = plans.Invalid("body", "request body exceeds %d bytes (6 MiB)", MaxBodyBytes)

// readBody reads the whole (bounded) request body.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errBodyTooLarge
	}
	if errors.Is(err, reqbody.ErrTimeout) {
		return nil, err // writeError answers 408
	}
	if err != nil {
		return nil, plans.Invalid("body", "reading request body: %v", err)
	}
	return b, nil
}

// decode reads the JSON body into v. An empty body decodes as {}. Unknown
// fields are ignored, as AWS ignores fields outside tollgate's subset;
// wrong types and malformed JSON are 400 naming the field.
func decode(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return badJSON(err)
	}
	if dec.More() {
		return plans.Invalid("body", "malformed JSON: data after the top-level value")
	}
	return nil
}

// param returns the path parameter name, percent-decoded.
func param(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// page reads the "position" and "limit" query parameters (limit default 25,
// 1..500; anything else is 400 naming limit).
func page(r *http.Request) (Page, error) {
	q := r.URL.Query()
	p := Page{Position: q.Get("position"), Limit: DefaultPageLimit}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxPageLimit {
			return Page{}, plans.Invalid("limit", "limit %q must be an integer between 1 and %d", l, MaxPageLimit)
		}
		p.Limit = n
	}
	return p, nil
}

// list is AWS's list shape: "item" always present, "position" only when
// more remain.
type list[T any] struct {
	Item     []T    `json:"item"`
	Position string `json:"position,omitempty"`
}

// writeList writes items and next as a 200 list.
func writeList[T any](w http.ResponseWriter, items []T, next string) {
	if items == nil {
		items = []T{}
	}
	writeJSON(w, http.StatusOK, list[T]{Item: items, Position: next})
}

// boolQuery reads a boolean query parameter ("true"/"false"; absent is
// false); anything else is 400 naming it.
func boolQuery(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, plans.Invalid(name, "%s %q must be true or false", name, v)
	}
	return b, nil
}
