package portal

import (
	"context"
	"crypto/subtle"
	"net/http"

	"tollgate/plans"
)

// Cookie names: the session, and the token anonymous forms (sign in, sign
// up, an invite) carry against cross-site requests before there is one.
const (
	sessionCookie = "tollgate_portal"
	formCookie    = "tollgate_portal_form"
	csrfField     = "csrf"
)

// cookie returns a cookie of the portal: HTTP only, SameSite=Strict, on
// /portal/ only, Secure unless the portal is served over plain HTTP
// (docs/portal.md, "Security").
func (s *Server) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/portal/", MaxAge: maxAge, HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode}
}

// session is the signed-in account of a request and its CSRF token.
type session struct {
	account *plans.PortalAccount
	csrf    string
	hash    string // of the session token
}

type sessionKey struct{}

// sessionOf returns the request's session, nil when signed out.
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// loadSession puts the live session of the request's cookie, if any, in
// its context.
func (s *Server) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil || c.Value == "" {
			next.ServeHTTP(w, r)
			return
		}
		hash := plans.PortalTokenHash(plans.TokenSession, c.Value)
		acct, csrf, err := s.accounts.PortalSession(r.Context(), hash)
		switch {
		case err == nil:
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, &session{account: acct, csrf: csrf, hash: hash}))
		case plans.ErrorKind(err) != plans.KindNotFound:
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// signedIn lets only signed-in requests through; others are sent to the
// sign-in page.
func (s *Server) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionOf(r.Context()) == nil {
			http.Redirect(w, r, "/portal/signin", http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkForm refuses a POST that does not come from one of the portal's
// own forms: a cross-origin Origin, or a CSRF field that does not match
// the session's token (signed in) or the form cookie (signed out).
func (s *Server) checkForm(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != s.origin(r) {
			s.refuse(w, r, http.StatusForbidden, "This form was sent from another site.")
			return
		}
		want := ""
		if sess := sessionOf(r.Context()); sess != nil {
			want = sess.csrf
		} else if c, err := r.Cookie(formCookie); err == nil {
			want = c.Value
		}
		got := r.PostFormValue(csrfField)
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.refuse(w, r, http.StatusForbidden, "This form has expired: open the page again and resend it.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// formToken returns the CSRF token a page's forms carry: the session's,
// or, signed out, the form cookie's (set when absent).
func (s *Server) formToken(w http.ResponseWriter, r *http.Request) string {
	if sess := sessionOf(r.Context()); sess != nil {
		return sess.csrf
	}
	if c, err := r.Cookie(formCookie); err == nil && c.Value != "" {
		return c.Value
	}
	t := plans.NewPortalToken()
	http.SetCookie(w, s.cookie(formCookie, t, 0))
	return t
}

// startSession signs acct in: a new session token in the session cookie.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, acct *plans.PortalAccount) error {
	token := plans.NewPortalToken()
	if err := s.accounts.CreatePortalSession(r.Context(), plans.PortalTokenHash(plans.TokenSession, token), acct.ID, plans.NewPortalToken()); err != nil {
		return err
	}
	http.SetCookie(w, s.cookie(sessionCookie, token, int(plans.PortalSessionTTL.Seconds())))
	http.SetCookie(w, s.cookie(formCookie, "", -1))
	return nil
}
