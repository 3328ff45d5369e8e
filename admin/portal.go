package admin

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

// PortalInviter stores the developer portal's invites
// (plans/postgres.DB).
type PortalInviter interface {
	CreatePortalInvite(ctx context.Context, in *plans.PortalInvite, tokenHash string) error
	DeletePortalAccount(ctx context.Context, email string) error
	ListPortalAccounts(ctx context.Context, p Page) ([]plans.PortalAccount, string, error)
	ListPortalInvites(ctx context.Context, p Page) ([]plans.PendingInvite, string, error)
	DeletePortalInvites(ctx context.Context, email string) error
}

// portalRoutes serves the developer portal's pages at /portal/ when the
// portal runs on this port (Options.Portal, its own accounts and sessions:
// no admin authentication), and POST /portal/invites, an admin API call,
// wherever the portal runs (Options.PortalURL).
func (s *Server) portalRoutes(r chi.Router, opts Options) {
	if opts.PortalInvites != nil && opts.PortalURL != "" {
		r.Post("/portal/invites", s.handle(s.createPortalInvite))
		r.Get("/portal/invites", s.handle(s.getPortalInvites))
		r.Delete("/portal/invites/{email}", s.handle(s.deletePortalInvites))
		r.Get("/portal/accounts", s.handle(s.getPortalAccounts))
		r.Delete("/portal/accounts/{email}", s.handle(s.deletePortalAccount))
	}
	if opts.Portal != nil {
		r.Handle("/portal", opts.Portal)
		r.Handle("/portal/*", opts.Portal)
	}
}

// portalPath reports whether path is one of the portal's pages (served
// without admin authentication), not one of the admin calls about it.
func portalPath(path string) bool {
	return (path == "/portal" || strings.HasPrefix(path, "/portal/")) && path != "/portal/invites" && path != "/portal/accounts" &&
		!strings.HasPrefix(path, "/portal/invites/") && !strings.HasPrefix(path, "/portal/accounts/")
}

// createPortalInvite: POST /portal/invites {email, customerId,
// usagePlanIds} → 201 {"url"}: the link, on TOLLGATE_PORTAL_URL, by which
// the partner sets a password and signs in (valid a week, once). The
// account manages the keys of customerId and may create keys in those
// plans (docs/portal.md).
func (s *Server) createPortalInvite(w http.ResponseWriter, r *http.Request) error {
	var in plans.PortalInvite
	if err := decode(r, &in); err != nil {
		return err
	}
	token := plans.NewPortalToken()
	if err := s.invites.CreatePortalInvite(r.Context(), &in, plans.PortalTokenHash(plans.TokenInvite, token)); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]string{"url": plans.PortalInviteURL(s.portalURL, token),
		"expiresAt": s.now().Add(plans.PortalInviteTTL).UTC().Format(time.RFC3339)})
	return nil
}

// deletePortalAccount: DELETE /portal/accounts/{email} → 202: the
// partner can no longer sign in (its sessions end); its keys stay, as the
// operator's to disable or delete.
func (s *Server) deletePortalAccount(w http.ResponseWriter, r *http.Request) error {
	email, err := plans.NormalizeEmail(param(r, "email"))
	if err != nil {
		return err
	}
	if err := s.invites.DeletePortalAccount(r.Context(), email); err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}

// portalAccountView is a portal account as GET /portal/accounts lists it:
// never its password's hash.
type portalAccountView struct {
	ID           string      `json:"id"`
	Email        string      `json:"email"`
	CustomerID   string      `json:"customerId"`
	UsagePlanIDs []string    `json:"usagePlanIds"`
	CreatedDate  plans.Epoch `json:"createdDate"`
}

// getPortalAccounts: GET /portal/accounts → 200 list of the partners'
// accounts by email (paged).
func (s *Server) getPortalAccounts(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	as, next, err := s.invites.ListPortalAccounts(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]portalAccountView, 0, len(as))
	for _, a := range as {
		out = append(out, portalAccountView{ID: a.ID, Email: a.Email, CustomerID: a.CustomerID, UsagePlanIDs: a.UsagePlanIDs, CreatedDate: plans.Epoch{Time: a.CreatedDate}})
	}
	writeList(w, out, next)
	return nil
}

// getPortalInvites: GET /portal/invites → 200 list of the pending
// invites (not used, not expired) by email (paged; an email's invites are
// on one page). Their links are never shown again: only hashes are kept.
func (s *Server) getPortalInvites(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	ins, next, err := s.invites.ListPortalInvites(r.Context(), p)
	if err != nil {
		return err
	}
	writeList(w, ins, next)
	return nil
}

// deletePortalInvites: DELETE /portal/invites/{email} → 202: the pending
// invites of email stop working (404 when it has none).
func (s *Server) deletePortalInvites(w http.ResponseWriter, r *http.Request) error {
	email, err := plans.NormalizeEmail(param(r, "email"))
	if err != nil {
		return err
	}
	if err := s.invites.DeletePortalInvites(r.Context(), email); err != nil {
		return err
	}
	writeAccepted(w)
	return nil
}

// KeyUsage is GetUsage for one key of a plan: one [used, remaining] pair
// per UTC day from from to to (the developer portal's usage chart reads
// it). Errors: the store's (KindNotFound for the plan), KindUnavailable.
func (s *Server) KeyUsage(ctx context.Context, planID, keyID string, from, to time.Time) ([][]int64, error) {
	if s.usage == nil {
		return nil, plans.Unavailable(nil, "usage is not available on this node")
	}
	plan, err := s.store.GetUsagePlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	today, err := s.usageToday(ctx)
	if err != nil {
		return nil, err
	}
	rule, err := s.keyRule(ctx, plan, keyID) // the key's own periods
	if err != nil {
		return nil, err
	}
	counts, _, err := s.usageCounts(ctx, planID, []string{keyID}, periodStart(rule, from), to, today)
	if err != nil {
		return nil, err
	}
	return s.keyUsage(ctx, planID, keyID, rule, from, to, today, counts[keyID])
}
