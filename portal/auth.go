package portal

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"tollgate/internal/clientaddr"
	"tollgate/plans"
)

// signinForm is what the sign-in, sign-up and invite pages show again
// after a refusal.
type signinForm struct {
	Email      string
	Invite     string // the invite token, on the invite page
	CustomerID string
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	if sessionOf(r.Context()) != nil {
		http.Redirect(w, r, "/portal/apis", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Data: signinForm{}})
}

// signin checks email and password; failures are limited per client
// address (429 once used up) and say nothing of which was wrong.
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	addr := clientaddr.Client(r, clientaddr.Peer(r), s.opts.TrustedProxies)
	if blocked, wait := s.failures.Blocked(addr); blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		s.refuse(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from your address: wait a minute and try again.")
		return
	}
	email, password := r.PostFormValue("email"), r.PostFormValue("password")
	acct, err := s.accounts.PortalAccountByEmail(r.Context(), normalized(email))
	switch {
	case plans.ErrorKind(err) == plans.KindNotFound:
		verifyPassword(password, dummyHash()) // as long as a wrong password
	case err != nil:
		s.fail(w, r, err)
		return
	case verifyPassword(password, acct.PasswordHash):
		if err := s.startSession(w, r, acct); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/portal/apis", http.StatusSeeOther)
		return
	}
	s.failures.Fail(addr)
	s.render(w, r, http.StatusUnauthorized, "signin", page{Title: "Sign in", Error: "Wrong email or password.",
		Data: signinForm{Email: email}})
}

// normalized is an email as accounts store it, or the input when it is
// not one (which then matches no account).
func normalized(email string) string {
	if e, err := plans.NormalizeEmail(email); err == nil {
		return e
	}
	return email
}

// signout ends the session.
func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	if sess := sessionOf(r.Context()); sess != nil {
		if err := s.accounts.DeletePortalSession(r.Context(), sess.hash); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, s.cookie(sessionCookie, "", -1))
	http.Redirect(w, r, "/portal/signin", http.StatusSeeOther)
}

// invitePage shows the invite's account and asks for a password.
func (s *Server) invitePage(w http.ResponseWriter, r *http.Request) {
	token := chi.URLParam(r, "token")
	in, err := s.accounts.PortalInvite(r.Context(), plans.PortalTokenHash(plans.TokenInvite, token))
	if err != nil {
		s.inviteFailed(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "invite", page{Title: "Accept your invitation",
		Data: signinForm{Email: in.Email, Invite: token, CustomerID: in.CustomerID}})
}

// acceptInvite sets the account's password from the invite and signs in.
func (s *Server) acceptInvite(w http.ResponseWriter, r *http.Request) {
	token := chi.URLParam(r, "token")
	hash := plans.PortalTokenHash(plans.TokenInvite, token)
	password := r.PostFormValue("password")
	if err := plans.ValidatePassword(password); err != nil {
		in, ierr := s.accounts.PortalInvite(r.Context(), hash)
		if ierr != nil {
			s.inviteFailed(w, r, ierr)
			return
		}
		s.render(w, r, http.StatusBadRequest, "invite", page{Title: "Accept your invitation", Error: plans.ErrorMessage(err),
			Data: signinForm{Email: in.Email, Invite: token, CustomerID: in.CustomerID}})
		return
	}
	acct, err := s.accounts.AcceptPortalInvite(r.Context(), hash, hashPassword(password))
	if err != nil {
		s.inviteFailed(w, r, err)
		return
	}
	if err := s.startSession(w, r, acct); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/apis", http.StatusSeeOther)
}

// inviteFailed answers an invite link that does not work in words.
func (s *Server) inviteFailed(w http.ResponseWriter, r *http.Request, err error) {
	if plans.ErrorKind(err) == plans.KindNotFound {
		s.refuse(w, r, http.StatusNotFound, plans.ErrorMessage(err)+". Ask for a new one.")
		return
	}
	s.fail(w, r, err)
}

func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signup", page{Title: "Sign up", Data: signinForm{}})
}

// signup creates an account of its own customer whose keys go in the
// operator's sign-up plan, and signs in.
func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
	email, password := r.PostFormValue("email"), r.PostFormValue("password")
	again := func(status int, msg string) {
		s.render(w, r, status, "signup", page{Title: "Sign up", Error: msg, Data: signinForm{Email: email}})
	}
	norm, err := plans.NormalizeEmail(email)
	if err == nil {
		err = plans.ValidatePassword(password)
	}
	if err != nil {
		again(http.StatusBadRequest, plans.ErrorMessage(err))
		return
	}
	acct := &plans.PortalAccount{Email: norm, UsagePlanIDs: []string{s.opts.SignupPlan}, PasswordHash: hashPassword(password)}
	if err := s.accounts.CreatePortalAccount(r.Context(), acct); err != nil {
		if plans.ErrorKind(err) == plans.KindConflict {
			again(http.StatusConflict, "This email has an account already: sign in instead.")
			return
		}
		s.fail(w, r, err)
		return
	}
	if err := s.startSession(w, r, acct); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/keys", http.StatusSeeOther)
}
