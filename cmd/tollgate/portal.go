package main

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"tollgate/admin"
	"tollgate/plans"
	"tollgate/plans/postgres"
	"tollgate/portal"
	"tollgate/push"
	"tollgate/web"
)

// defaultPortalGatewayURL is TOLLGATE_PORTAL_GATEWAY_URL's default (make
// demo's gateway).
const defaultPortalGatewayURL = "http://{apiId}.execute-api.localhost:8000"

// startPortal builds the developer portal (docs/portal.md) of an admin
// node whose admin API listens on adminAddr. With TOLLGATE_PORTAL_ADDR it
// serves the portal there and returns a nil handler; otherwise it returns
// the portal for the admin port. It also returns the portal's base URL
// (TOLLGATE_PORTAL_URL, else its own address) and the usage port, which
// the caller points at the admin server once it exists.
func (m *Main) startPortal(db *postgres.DB, pub *push.Publisher, adminAddr string) (onAdmin http.Handler, baseURL string, usage *lateUsage, err error) {
	cfg := m.Config
	usage = &lateUsage{}
	late := &lateHandler{}
	portalAddr := adminAddr
	if cfg.PortalAddr != "" {
		if portalAddr, err = m.listen("portal", cfg.PortalAddr, late, 0); err != nil {
			return nil, "", nil, err
		}
		m.PortalAddr = portalAddr
	}
	baseURL = cfg.PortalURL
	if baseURL == "" {
		baseURL = "http://" + reachable(portalAddr)
	}
	gatewayURL := cfg.PortalGatewayURL
	if gatewayURL == "" {
		gatewayURL = defaultPortalGatewayURL
	}
	srv := portal.New(portal.Options{Accounts: db, Keys: db, Catalog: db, Usage: usage, Publisher: pub,
		BaseURL: baseURL, GatewayURL: gatewayURL, SignupPlan: cfg.PortalSignupPlan,
		KeyFormat: plans.KeyFormat{Prefix: cfg.KeyPrefix}, KeyPepper: cfg.Secrets.KeyPepper, Secrets: m.secrets,
		Static: web.FS(), TrustedProxies: m.adminProxies, Logger: m.Logger})
	if cfg.PortalAddr != "" {
		late.set(srv)
		return nil, baseURL, usage, nil
	}
	return srv, baseURL, usage, nil
}

// reachable turns a bound address into one a browser can open: an
// unspecified host (":8002", "0.0.0.0:8002") becomes localhost.
func reachable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// lateHandler serves with a handler set after its listener was bound (the
// admin API needs the bound address of the portal); until then 503.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) set(h http.Handler) { l.h.Store(&h) }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := l.h.Load()
	if h == nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// lateUsage is the portal's usage port: the admin server, set once it
// exists.
type lateUsage struct{ s atomic.Pointer[admin.Server] }

func (l *lateUsage) set(s *admin.Server) { l.s.Store(s) }

// CustomerUsage implements portal.Usage.
func (l *lateUsage) CustomerUsage(ctx context.Context, planID, customerID string) (*plans.CustomerUsage, error) {
	s := l.s.Load()
	if s == nil {
		return nil, plans.Unavailable(nil, "starting")
	}
	return s.CustomerUsage(ctx, planID, customerID)
}

// KeyUsage implements portal.Usage.
func (l *lateUsage) KeyUsage(ctx context.Context, planID, keyID string, from, to time.Time) ([][]int64, error) {
	s := l.s.Load()
	if s == nil {
		return nil, plans.Unavailable(nil, "starting")
	}
	return s.KeyUsage(ctx, planID, keyID, from, to)
}
