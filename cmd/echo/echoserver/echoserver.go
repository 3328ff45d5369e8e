// Package echoserver is the echo upstream used by demos and tests: an
// http.Handler that describes each request it receives and counts its hits.
package echoserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Reply is the JSON body the echo upstream answers with.
type Reply struct {
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	RawPath  string              `json:"rawPath,omitempty"`
	Query    map[string][]string `json:"query"`
	Headers  map[string][]string `json:"headers"`
	Host     string              `json:"host"`
	BodySize int64               `json:"bodySize"`
	Hits     int64               `json:"hits"`
	Padding  string              `json:"padding,omitempty"`
}

// Server is the echo handler. Hits counts every request served.
type Server struct {
	hits atomic.Int64
}

// New returns an echo handler with a zero hit count.
func New() *Server { return &Server{} }

// Hits returns how many requests the server has answered.
func (s *Server) Hits() int64 { return s.hits.Load() }

// ServeHTTP answers with a Reply. Query parameters status, delay, size and
// header steer the answer (see package echo's doc).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.hits.Add(1)
	q := r.URL.Query()
	if d, err := time.ParseDuration(q.Get("delay")); err == nil && d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	size, _ := io.Copy(io.Discard, r.Body)
	reply := Reply{
		Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, Query: q,
		Headers: r.Header, Host: r.Host, BodySize: size, Hits: n,
	}
	if want, err := strconv.Atoi(q.Get("size")); err == nil && want > 0 && want <= 16<<20 {
		reply.Padding = strings.Repeat("x", want)
	}
	for _, h := range q["header"] {
		if name, value, ok := strings.Cut(h, ":"); ok {
			w.Header().Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	status := http.StatusOK
	if c, err := strconv.Atoi(q.Get("status")); err == nil && c >= 200 && c <= 599 {
		status = c
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Upstream-Hits", strconv.FormatInt(n, 10))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_ = json.NewEncoder(w).Encode(reply)
	}
}
