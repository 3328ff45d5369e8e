package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// AuditLog is the audit log's store (plans/postgres.DB). Entries of
// changes to PostgreSQL are recorded by the store itself, in the change's
// transaction (plans.WithAudit); RecordAudit records the others.
type AuditLog interface {
	RecordAudit(ctx context.Context, e *plans.AuditEntry) error
	SetAuditResource(ctx context.Context, id int64, resource string) error
	AuditEntries(ctx context.Context, q plans.AuditQuery) ([]plans.AuditEntry, string, error)
}

// SourceHeader is the request header by which a client names its door;
// only "console" is taken (the operator console sends it). The actor,
// not the source, says who made a change.
const SourceHeader = "X-Tollgate-Source"

// audited records every call of a route whose rule writes or reads key
// values: it puts an entry (actor, source, operation, resource, the
// redacted request) in the request's context, which the store records in
// the change's own transaction; a call that changed nothing in
// PostgreSQL but succeeded is recorded alone after it. A created
// resource's path is filled in from the answer. It is the one place
// auditing happens; handlers never do it.
func (s *Server) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt, ok := routeFrom(r.Context())
		if !ok || s.audit == nil || (!rt.Rule.Write && !rt.Rule.KeyValues) {
			next.ServeHTTP(w, r)
			return
		}
		e := &plans.AuditEntry{Actor: principalOf(r.Context()).Name, Source: sourceOf(r, rt), Operation: rt.Op,
			Region: requestRegion(r), Resource: r.URL.Path, Change: s.changeOf(r)}
		if rt.Rule.Area == areaByARN {
			e.Resource, e.Region = tagResource(rt.ARN, e.Region)
		}
		cw := &captureWriter{ResponseWriter: w, keep: rt.Rule.Created != ""}
		next.ServeHTTP(cw, r.WithContext(plans.WithAudit(r.Context(), e)))
		if cw.status()/100 != 2 {
			return
		}
		ctx := context.WithoutCancel(r.Context())
		if !e.Recorded {
			if err := s.audit.RecordAudit(ctx, e); err != nil {
				s.log.Error("admin: audit entry not recorded", "operation", e.Operation, "actor", e.Actor, "err", err)
				return
			}
		}
		if path := createdPath(rt.Rule.Created, r, cw.body.Bytes()); path != "" {
			if err := s.audit.SetAuditResource(ctx, e.ID, path); err != nil {
				s.log.Warn("admin: audit entry keeps the collection as its resource", "operation", e.Operation, "err", err)
			}
		}
	})
}

// sourceOf is the door of a call: the route's own source, import for an
// import, console when the console says so, else api.
func sourceOf(r *http.Request, rt route) string {
	switch {
	case rt.Rule.Source != "":
		return rt.Rule.Source
	case rt.Op == rt.Rule.ImportOp && rt.Op != "":
		return plans.SourceImport
	case r.Header.Get(SourceHeader) == plans.SourceConsole:
		return plans.SourceConsole
	}
	return plans.SourceAPI
}

// requestRegion is the region of the request's SigV4 scope, else
// plans.DefaultRegion.
func requestRegion(r *http.Request) string {
	if h, ok := parseSigV4Header(r.Header.Get("Authorization")); ok {
		if scope := strings.Split(h.Credential, "/"); len(scope) == 5 && scope[2] != "" {
			return scope[2]
		}
	}
	return plans.DefaultRegion
}

// tagResource is the path and region of the ARN a tag route names (the
// tagged resource's, so its own audit entries list its tag changes);
// region stays when the ARN has none.
func tagResource(arn, region string) (string, string) {
	r, path, ok := splitARN(arn)
	if !ok {
		return "/tags", region
	}
	if r != "" {
		region = r
	}
	return path, region
}

// createdPath fills template's {name}s from the route's parameters, else
// from the answer's top-level string fields; "" when one stays unknown.
func createdPath(template string, r *http.Request, answer []byte) string {
	if template == "" {
		return ""
	}
	var fields map[string]any
	_ = json.Unmarshal(answer, &fields)
	out := paramPattern.ReplaceAllStringFunc(template, func(m string) string {
		name := m[1 : len(m)-1]
		if v := chi.URLParam(r, name); v != "" {
			return v
		}
		if v, ok := fields[name].(string); ok && v != "" {
			return url.PathEscape(v)
		}
		return "\x00"
	})
	if strings.Contains(out, "\x00") {
		return ""
	}
	return out
}

// maxAuditBody is the largest JSON body recorded whole; a larger one is
// recorded by its size.
const maxAuditBody = 64 << 10

// changeOf is what the audit log keeps of a request: its query and its
// body, secrets and key values redacted (redact), or only the body's
// type and size when it is not JSON (an OpenAPI document in YAML, a key
// CSV) or too large. The body is put back for the handler.
func (s *Server) changeOf(r *http.Request) json.RawMessage {
	out := map[string]any{}
	if q := r.URL.Query(); len(q) > 0 {
		query := map[string]string{}
		for k := range q {
			query[k] = q.Get(k)
		}
		out["query"] = redact(query, "")
	}
	b, err := readBody(r)
	if err != nil {
		r.Body = io.NopCloser(failingReader{err})
	} else {
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	if len(bytes.TrimSpace(b)) > 0 {
		var v any
		if len(b) <= maxAuditBody && json.Unmarshal(b, &v) == nil {
			out["body"] = redact(v, "")
		} else {
			out["body"] = map[string]any{"contentType": r.Header.Get("Content-Type"), "bytes": len(b)}
		}
	}
	j, _ := json.Marshal(out)
	return j
}

// failingReader returns err on every read (a body that failed while the
// audit read it fails the same way for the handler).
type failingReader struct{ err error }

func (e failingReader) Read([]byte) (int, error) { return 0, e.err }

// Redacted replaces a secret in the audit log.
const Redacted = "REDACTED"

// secretNames are fields (lowercase) whose values are never recorded:
// API key values, credentials' secrets, private keys.
var secretNames = map[string]bool{
	"value": true, "token": true, "secret": true, "secretaccesskey": true, "password": true,
	"privatekey": true, "certificateprivatekey": true, "idempotencytoken": true,
}

// redact returns v with every secret field's value replaced by Redacted.
// A patch operation's value is redacted when its path names a secret.
func redact(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		if p, ok := t["path"].(string); ok && t["op"] != nil {
			out := map[string]any{}
			for k, x := range t {
				out[k] = x
			}
			if secretPath(p) && t["value"] != nil {
				out["value"] = Redacted
			}
			return out
		}
		out := map[string]any{}
		for k, x := range t {
			if secretNames[strings.ToLower(k)] {
				out[k] = Redacted
				continue
			}
			out[k] = redact(x, k)
		}
		return out
	case map[string]string:
		out := map[string]any{}
		for k, x := range t {
			if secretNames[strings.ToLower(k)] {
				out[k] = Redacted
				continue
			}
			out[k] = x
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redact(x, key)
		}
		return out
	}
	return v
}

// secretPath reports whether a patch path names a secret field.
func secretPath(p string) bool {
	for _, seg := range strings.Split(strings.ToLower(p), "/") {
		if secretNames[seg] {
			return true
		}
	}
	return false
}

// captureWriter notes the status written and, when keep is set, keeps up
// to maxAuditBody bytes of the answer (the created resource's id).
type captureWriter struct {
	http.ResponseWriter
	code int
	keep bool
	body bytes.Buffer
}

func (c *captureWriter) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	if c.keep && c.body.Len() < maxAuditBody {
		c.body.Write(b[:min(len(b), maxAuditBody-c.body.Len())])
	}
	return c.ResponseWriter.Write(b)
}

// Flush lets streamed answers (exports) through.
func (c *captureWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *captureWriter) status() int {
	if c.code == 0 {
		return http.StatusOK
	}
	return c.code
}

// auditEntryJSON is an entry on the wire (GET /audit).
type auditEntryJSON struct {
	Time      string          `json:"time"`
	Actor     string          `json:"actor"`
	Source    string          `json:"source"`
	Operation string          `json:"operation"`
	Resource  string          `json:"resource"`
	Change    json.RawMessage `json:"change"`
}

func entryJSON(e plans.AuditEntry) auditEntryJSON {
	return auditEntryJSON{Time: e.Time.UTC().Format(time.RFC3339), Actor: e.Actor, Source: e.Source,
		Operation: e.Operation, Resource: e.ARN(), Change: e.Change}
}

func (s *Server) auditRoutes(r chi.Router) {
	if s.audit == nil {
		return
	}
	r.Get("/audit", s.handle(s.getAudit))
	r.Get("/audit/export", s.handle(s.exportAudit))
}

// auditQuery reads resource (an ARN or a path), actor, from and to
// (RFC 3339), limit and position.
func auditQuery(r *http.Request) (plans.AuditQuery, error) {
	q := r.URL.Query()
	p, err := page(r)
	if err != nil {
		return plans.AuditQuery{}, err
	}
	out := plans.AuditQuery{Actor: q.Get("actor"), Limit: p.Limit, Position: p.Position}
	if res := q.Get("resource"); res != "" {
		out.Resource = res
		if strings.HasPrefix(res, "arn:") {
			out.Resource = arnPath(res)
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &out.From}, {"to", &out.To}} {
		if v := q.Get(f.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return out, plans.Invalid(f.name, "%s %q must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", f.name, v)
			}
			*f.dst = t
		}
	}
	return out, nil
}

// getAudit: GET /audit?resource=&actor=&from=&to=&limit=&position= →
// 200 {item: [{time, actor, source, operation, resource, change}],
// position}, newest first.
func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) error {
	q, err := auditQuery(r)
	if err != nil {
		return err
	}
	entries, next, err := s.audit.AuditEntries(r.Context(), q)
	if err != nil {
		return err
	}
	items := make([]auditEntryJSON, len(entries))
	for i, e := range entries {
		items[i] = entryJSON(e)
	}
	writeList(w, items, next)
	return nil
}

// exportAudit: GET /audit/export with GET /audit's filters (no paging) →
// 200 every matching entry, newest first, one JSON object a line
// (application/x-ndjson).
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request) error {
	q, err := auditQuery(r)
	if err != nil {
		return err
	}
	q.Limit, q.Position = MaxPageLimit, ""
	started := false
	for {
		entries, next, err := s.audit.AuditEntries(r.Context(), q)
		if err != nil {
			if started {
				s.log.Warn("admin: audit export cut short", "err", err)
				return nil
			}
			return err
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		enc := json.NewEncoder(w)
		for _, e := range entries {
			_ = enc.Encode(entryJSON(e))
		}
		if next == "" {
			return nil
		}
		q.Position = next
	}
}
