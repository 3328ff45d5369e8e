package portal

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// maxKeys bounds the keys one partner's page lists.
const maxKeys = 1000

// keyView is one row of the keys page.
type keyView struct {
	ID, Name  string
	Plans     string // names of its usage plans
	Status    string // Enabled, Disabled, Expired
	Created   time.Time
	ExpiresAt *time.Time
}

// planOption is a usage plan a partner may create keys in.
type planOption struct{ ID, Name, Limits string }

type keysData struct {
	Keys  []keyView
	Plans []planOption
}

// keysPage lists the partner's keys (its customer's) and offers to create
// one in one of its plans.
func (s *Server) keysPage(w http.ResponseWriter, r *http.Request) {
	acct := sessionOf(r.Context()).account
	keys, err := s.customerKeys(r.Context(), acct.CustomerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	opts, err := s.planOptions(r.Context(), acct)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := keysData{Plans: opts}
	now := time.Now()
	for _, k := range keys {
		names, err := s.planNames(r.Context(), k.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		status := "Enabled"
		switch {
		case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
			status = "Expired"
		case !k.Enabled:
			status = "Disabled"
		}
		data.Keys = append(data.Keys, keyView{ID: k.ID, Name: k.Name, Plans: strings.Join(names, ", "), Status: status,
			Created: k.CreatedDate.Time, ExpiresAt: k.ExpiresAt})
	}
	notice := ""
	if r.URL.Query().Get("revoked") != "" {
		notice = "The key was revoked: every gateway refuses it within a second."
	}
	s.render(w, r, http.StatusOK, "keys", page{Title: "Keys", Nav: "keys", Notice: notice, Data: data})
}

// customerKeys returns the keys of a customer, by id.
func (s *Server) customerKeys(ctx context.Context, customerID string) ([]plans.ApiKey, error) {
	var out []plans.ApiKey
	pos := ""
	for {
		ks, next, err := s.keys.ListApiKeys(ctx, "", customerID, plans.Page{Limit: 500, Position: pos})
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if k.CustomerID == customerID { // the store filters; this keeps it so
				out = append(out, k)
			}
		}
		if next == "" || len(out) >= maxKeys {
			return out, nil
		}
		pos = next
	}
}

// planNames returns the names of the usage plans key keyID is in.
func (s *Server) planNames(ctx context.Context, keyID string) ([]string, error) {
	ps, _, err := s.keys.ListUsagePlans(ctx, keyID, plans.Page{Limit: 500})
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names, err
}

// planOptions returns the partner's usage plans that still exist.
func (s *Server) planOptions(ctx context.Context, acct *plans.PortalAccount) ([]planOption, error) {
	ps, err := s.partnerPlans(ctx, acct)
	out := make([]planOption, len(ps))
	for i, p := range ps {
		out[i] = planOption{ID: p.ID, Name: p.Name, Limits: limitsText(p)}
	}
	return out, err
}

// partnerPlans returns the usage plans of acct that still exist, in its
// order.
func (s *Server) partnerPlans(ctx context.Context, acct *plans.PortalAccount) ([]*plans.UsagePlan, error) {
	var out []*plans.UsagePlan
	for _, id := range acct.UsagePlanIDs {
		p, err := s.keys.GetUsagePlan(ctx, id)
		if plans.ErrorKind(err) == plans.KindNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// limitsText says a plan's throttle and quota in words.
func limitsText(p *plans.UsagePlan) string {
	var parts []string
	if t := p.Throttle; t != nil {
		parts = append(parts, strconv.FormatFloat(t.RateLimit, 'f', -1, 64)+" requests/s, bursts of "+strconv.Itoa(int(t.BurstLimit)))
	}
	if q := p.Quota; q != nil {
		parts = append(parts, strconv.Itoa(int(q.Limit))+" requests per "+strings.ToLower(q.Period))
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, "; ")
}

// valueData is the page that shows a key's value, once.
type valueData struct {
	Key           plans.ApiKey
	Value         string
	PreviousUntil time.Time // a rotation's: until when the old value works
}

// createKey makes an enabled key of the partner's customer in one of its
// plans, through the store methods the admin API uses, in one
// transaction (Keys.Atomically): a key that cannot join its plan is never
// stored, so no key is ever on no plan. It shows the value once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	acct := sessionOf(r.Context()).account
	planID := r.PostFormValue("plan")
	if !slices.Contains(acct.UsagePlanIDs, planID) {
		s.refuse(w, r, http.StatusBadRequest, "Choose one of your usage plans.")
		return
	}
	value := s.opts.KeyFormat.New()
	k := &plans.ApiKey{Name: strings.TrimSpace(r.PostFormValue("name")), Enabled: true, CustomerID: acct.CustomerID}
	if err := k.Validate(); err != nil {
		s.fail(w, r, err)
		return
	}
	err := s.keys.Atomically(r.Context(), keyCreateBound, func(ctx context.Context) error {
		if err := s.keys.CreateApiKey(s.auditedIn(ctx, r, "CreateApiKey", "/apikeys", map[string]any{"name": k.Name}), k, plans.HashKey(value, s.opts.KeyPepper)); err != nil {
			return err
		}
		ctx = s.auditedIn(ctx, r, "CreateUsagePlanKey", "/usageplans/"+planID+"/keys/"+k.ID, map[string]any{"keyId": k.ID, "keyType": plans.KeyTypeAPIKey})
		_, err := s.keys.CreateUsagePlanKey(ctx, planID, k.ID)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.published(r.Context())
	s.render(w, r, http.StatusCreated, "value", page{Title: "Key created", Nav: "keys", Data: valueData{Key: *k, Value: value}})
}

// keyCreateBound limits the transaction that creates a key in its plan.
const keyCreateBound = 10 * time.Second

// ownKey returns key id when it is the partner's; another customer's key
// is not found, as is one that does not exist.
func (s *Server) ownKey(ctx context.Context, id string) (*plans.ApiKey, error) {
	acct := sessionOf(ctx).account
	k, err := s.keys.GetApiKey(ctx, id)
	if err != nil {
		return nil, err
	}
	if k.CustomerID != acct.CustomerID {
		return nil, plans.NotFound("no such key")
	}
	return k, nil
}

// overlapChoices are the overlaps the rotate page offers.
var overlapChoices = []struct {
	Seconds int64
	Text    string
}{{0, "No overlap: the old value stops now"}, {600, "10 minutes"}, {3600, "1 hour"}, {86400, "1 day"}, {7 * 86400, "7 days"}}

type confirmData struct {
	Key      plans.ApiKey
	Token    string // a rotation's idempotency token: a form sent twice rotates once
	Overlaps any
}

func (s *Server) rotatePage(w http.ResponseWriter, r *http.Request) {
	k, err := s.ownKey(r.Context(), chi.URLParam(r, "keyId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "rotate", page{Title: "Rotate " + k.Name, Nav: "keys",
		Data: confirmData{Key: *k, Token: plans.NewPortalToken(), Overlaps: overlapChoices}})
}

// rotateKey rotates the partner's key with the chosen overlap and shows
// the new value once; the form's token makes a second send of the same
// form answer the same value.
func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.ownKey(r.Context(), chi.URLParam(r, "keyId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	overlap, err := strconv.ParseInt(r.PostFormValue("overlap"), 10, 64)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, "Choose how long the old value keeps working.")
		return
	}
	ctx := s.audited(r, "RotateApiKey", "/apikeys/"+k.ID, map[string]any{"overlapSeconds": overlap})
	value, rot, err := s.rotator.Rotate(ctx, k.ID, overlap, r.PostFormValue("token"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !rot.Replayed {
		s.published(r.Context())
	}
	s.render(w, r, http.StatusOK, "value", page{Title: "Key rotated", Nav: "keys",
		Data: valueData{Key: *k, Value: value, PreviousUntil: rot.PreviousValueExpiresAt}})
}

func (s *Server) revokePage(w http.ResponseWriter, r *http.Request) {
	k, err := s.ownKey(r.Context(), chi.URLParam(r, "keyId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "revoke", page{Title: "Revoke " + k.Name, Nav: "keys", Data: confirmData{Key: *k}})
}

// revokeKey deletes the partner's key.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.ownKey(r.Context(), chi.URLParam(r, "keyId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.keys.DeleteApiKey(s.audited(r, "DeleteApiKey", "/apikeys/"+k.ID, nil), k.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	s.published(r.Context())
	http.Redirect(w, r, "/portal/keys?revoked=1", http.StatusSeeOther)
}

// audited returns r's context carrying the audit entry of one portal
// write: the partner as actor, source portal (docs/operations.md, "Audit
// log"); the store records it in the write's transaction.
func (s *Server) audited(r *http.Request, op, resource string, change map[string]any) context.Context {
	return s.auditedIn(r.Context(), r, op, resource, change)
}

// auditedIn is audited for a context derived from r's (a transaction's).
func (s *Server) auditedIn(ctx context.Context, r *http.Request, op, resource string, change map[string]any) context.Context {
	if change == nil {
		change = map[string]any{}
	}
	b, _ := json.Marshal(change) // strings and numbers: cannot fail
	return plans.WithAudit(ctx, &plans.AuditEntry{Actor: "portal:" + sessionOf(r.Context()).account.Email,
		Source: plans.SourcePortal, Operation: op, Region: plans.DefaultRegion, Resource: resource, Change: b})
}
