package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) credentialRoutes(r chi.Router) {
	if s.creds == nil {
		return
	}
	r.Post("/credentials", s.handle(s.createCredential))
	r.Get("/credentials", s.handle(s.getCredentials))
	r.Get("/credentials/{credentialId}", s.handle(s.getCredential))
	r.Post("/credentials/{credentialId}/rotate", s.handle(s.rotateCredential))
	r.Delete("/credentials/{credentialId}", s.handle(s.deleteCredential))
}

// credentialWithSecret is the answer of CreateCredential and
// RotateCredential, the only ones that show the secret.
type credentialWithSecret struct {
	*plans.Credential
	Token           string `json:"token,omitempty"`
	SecretAccessKey string `json:"secretAccessKey,omitempty"`
}

// newSecret draws a new secret of kind: the answer's fields and what the
// store keeps (a token's hash, a SigV4 secret sealed).
func (s *Server) newSecret(kind string) (credentialWithSecret, plans.CredentialSecret) {
	if kind == plans.CredentialToken {
		t := plans.NewAdminToken()
		return credentialWithSecret{Token: t}, plans.CredentialSecret{TokenHash: plans.HashToken(t)}
	}
	akid, secret := plans.NewAccessKeyID(), plans.NewSecretAccessKey()
	return credentialWithSecret{SecretAccessKey: secret},
		plans.CredentialSecret{AccessKeyID: akid, SealedSecret: s.secrets.Seal([]byte(secret), credentialContext(akid))}
}

// createCredential: POST /credentials {name, role, kind} → 201 with the
// token, or accessKeyId and secretAccessKey, shown this once.
func (s *Server) createCredential(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string     `json:"name"`
		Role plans.Role `json:"role"`
		Kind string     `json:"kind"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	c := &plans.Credential{Name: in.Name, Role: in.Role, Kind: in.Kind}
	if err := c.Validate(); err != nil {
		return err
	}
	out, secret := s.newSecret(c.Kind)
	if err := s.creds.CreateCredential(r.Context(), c, secret); err != nil {
		return err
	}
	out.Credential = c
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// getCredentials: GET /credentials → 200 list, without secrets.
func (s *Server) getCredentials(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	cs, next, err := s.creds.ListCredentials(r.Context(), p)
	if err != nil {
		return err
	}
	writeList(w, cs, next)
	return nil
}

// getCredential: GET /credentials/{id} → 200 without its secret.
func (s *Server) getCredential(w http.ResponseWriter, r *http.Request) error {
	c, err := s.creds.GetCredential(r.Context(), param(r, "credentialId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// rotateCredential: POST /credentials/{id}/rotate → 200 with a new
// secret (and, for sigv4, a new access key id); the old one is refused
// on every node within credentialTTL.
func (s *Server) rotateCredential(w http.ResponseWriter, r *http.Request) error {
	id := param(r, "credentialId")
	old, err := s.creds.GetCredential(r.Context(), id)
	if err != nil {
		return err
	}
	out, secret := s.newSecret(old.Kind)
	c, err := s.creds.RotateCredential(r.Context(), id, secret)
	if err != nil {
		return err
	}
	s.auth.stored.forget()
	out.Credential = c
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteCredential: DELETE /credentials/{id} → 202; refused on every node
// within credentialTTL.
func (s *Server) deleteCredential(w http.ResponseWriter, r *http.Request) error {
	if err := s.creds.DeleteCredential(r.Context(), param(r, "credentialId")); err != nil {
		return err
	}
	s.auth.stored.forget()
	writeAccepted(w)
	return nil
}
