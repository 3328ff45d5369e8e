package admin

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) apiKeyRoutes(r chi.Router) {
	r.Post("/apikeys", s.handle(s.createApiKey))
	r.Get("/apikeys", s.handle(s.getApiKeys))
	r.Get("/apikeys/{apiKey}", s.handle(s.getApiKey))
	r.Patch("/apikeys/{apiKey}", s.handle(s.updateApiKey))
	r.Delete("/apikeys/{apiKey}", s.handle(s.deleteApiKey))
	r.Post("/apikeys/{apiKey}/rotate", s.handle(s.rotateApiKey))
}

// createApiKeyInput is CreateApiKey's body. enabled defaults to false, as
// AWS; generateDistinctId is accepted and has no effect (ids are always
// distinct from values); stageKeys are "restApiId/stageName".
type createApiKeyInput struct {
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Enabled            bool              `json:"enabled"`
	GenerateDistinctID bool              `json:"generateDistinctId"`
	Value              string            `json:"value"`
	CustomerID         string            `json:"customerId"`
	StageKeys          []string          `json:"stageKeys"`
	Tags               map[string]string `json:"tags"`
	ExpiresAt          string            `json:"expiresAt"`   // RFC 3339; sets tag tollgate:expires-at
	QuotaAnchor        string            `json:"quotaAnchor"` // the key's own quota calendar (plans.KeyCalendar)
	QuotaTimeZone      string            `json:"quotaTimeZone"`
}

// createApiKey: POST /apikeys → 201 ApiKey, the only response that carries
// the value (generated in the server's KeyFormat when not given). Only the
// value's hash (plans.HashKey under the pepper) reaches the store; a
// duplicate value is 409. ?mode=import is ImportApiKeys.
func (s *Server) createApiKey(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("mode") != "" {
		return s.importApiKeys(w, r)
	}
	var in createApiKeyInput
	if err := decode(r, &in); err != nil {
		return err
	}
	value := in.Value
	if value == "" {
		value = s.keyFmt.New()
	}
	k := &plans.ApiKey{Name: in.Name, Description: in.Description, Enabled: in.Enabled, Value: value,
		CustomerID: in.CustomerID, StageKeys: in.StageKeys, Tags: in.Tags, QuotaAnchor: in.QuotaAnchor, QuotaTimeZone: in.QuotaTimeZone}
	if in.ExpiresAt != "" {
		if err := setExpiry(k, in.ExpiresAt); err != nil {
			return err
		}
	}
	if err := s.validateNewKey(k); err != nil {
		return err
	}
	k.Value = "" // the store never sees the plaintext
	if err := s.store.CreateApiKey(r.Context(), k, plans.HashKey(value, s.pepper)); err != nil {
		return err
	}
	s.published(r.Context(), "CreateApiKey")
	k.Value = value
	writeJSON(w, http.StatusCreated, k)
	return nil
}

// validateNewKey checks k, its value's checksum when it has the shape of a
// generated one (checkChecksum) and its stage keys ("restApiId/stageName").
func (s *Server) validateNewKey(k *plans.ApiKey) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := checkChecksum(s.keyFmt, "value", k.Value); err != nil {
		return err
	}
	if k.StageKeys == nil {
		k.StageKeys = []string{}
	}
	for _, sk := range k.StageKeys {
		api, stage, ok := strings.Cut(sk, "/")
		if !ok || !plans.ValidID(api) || plans.ValidateStageName(stage) != nil {
			return plans.Invalid("stageKeys", "stage key %q must be restApiId/stageName", sk)
		}
	}
	return nil
}

// getApiKeys: GET /apikeys[?name=prefix&customerId=&includeValues=] → 200
// list. Values are never returned (docs/behaviour.md, "Differences from Amazon API Gateway"), includeValues or not.
func (s *Server) getApiKeys(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	if _, err := boolQuery(r, "includeValues"); err != nil {
		return err
	}
	q := r.URL.Query()
	keys, next, err := s.store.ListApiKeys(r.Context(), q.Get("name"), q.Get("customerId"), p)
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Value = ""
	}
	writeList(w, keys, next)
	return nil
}

// getApiKey: GET /apikeys/{id}[?includeValue=] → 200 ApiKey without value.
func (s *Server) getApiKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := boolQuery(r, "includeValue"); err != nil {
		return err
	}
	k, err := s.store.GetApiKey(r.Context(), param(r, "apiKey"))
	if err != nil {
		return err
	}
	k.Value = ""
	writeJSON(w, http.StatusOK, k)
	return nil
}

// updateApiKey: PATCH /apikeys/{id} → 200; paths /enabled, /name,
// /description, /customerId, /expiresAt (replace: an RFC 3339 time;
// remove: never expires), /quotaAnchor and /quotaTimeZone (the key's own
// quota calendar; remove: the tag's, else the plan's).
func (s *Server) updateApiKey(w http.ResponseWriter, r *http.Request) error {
	k, err := patchRecord(s, r, "UpdateApiKey", func(fn func(*plans.ApiKey) error) (*plans.ApiKey, error) {
		return s.store.UpdateApiKey(r.Context(), param(r, "apiKey"), fn)
	}, func(k *plans.ApiKey, ops []patchOp) error {
		if err := each(patchApiKey)(k, ops); err != nil {
			return err
		}
		return k.Validate()
	})
	if err != nil {
		return err
	}
	k.Value = ""
	writeJSON(w, http.StatusOK, k)
	return nil
}

// patchApiKey applies one operation to k.
func patchApiKey(k *plans.ApiKey, op patchOp) error {
	switch op.Path {
	case "/enabled":
		return setBool(op, &k.Enabled)
	case "/name":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		return setString(op, &k.Name)
	case "/description":
		return setString(op, &k.Description)
	case "/customerId":
		return setString(op, &k.CustomerID)
	case "/quotaAnchor":
		return setString(op, &k.QuotaAnchor)
	case "/quotaTimeZone":
		return setString(op, &k.QuotaTimeZone)
	case "/expiresAt":
		if op.Op == opRemove {
			delete(k.Tags, plans.ExpiresAtTag)
			return nil
		}
		if err := needOp(op, opReplace, opAdd); err != nil {
			return err
		}
		return setExpiry(k, op.Value)
	}
	return badPath(op)
}

// setExpiry sets k's expiry tag to v, an RFC 3339 time (400 naming
// expiresAt otherwise), as the time's UTC form to the microsecond (what
// PostgreSQL keeps).
func setExpiry(k *plans.ApiKey, v string) error {
	t, err := plans.ParseTime(v)
	if err != nil {
		return plans.Invalid("expiresAt", "expiresAt %q must be an RFC 3339 time such as 2027-01-31T00:00:00Z", v)
	}
	if k.Tags == nil {
		k.Tags = map[string]string{}
	}
	k.Tags[plans.ExpiresAtTag] = t.Truncate(time.Microsecond).Format(time.RFC3339Nano)
	return nil
}

// deleteApiKey: DELETE /apikeys/{id} → 202.
func (s *Server) deleteApiKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteApiKey(r.Context(), param(r, "apiKey")); err != nil {
		return err
	}
	s.published(r.Context(), "DeleteApiKey")
	writeAccepted(w)
	return nil
}

// checkChecksum refuses a chosen or imported value that has the shape of
// a generated one but not its checksum: every gateway would refuse it
// without a lookup (docs/behaviour.md, "API keys").
func checkChecksum(f plans.KeyFormat, field, value string) error {
	if f.BadChecksum(value) {
		return plans.Invalid(field, "%s has the shape of a generated key (prefix %q, %d characters) but not its checksum: mistyped, or choose a value of another length",
			field, value[:len(value)-plans.KeyRandomLen-plans.KeyChecksumLen], len(value))
	}
	return nil
}
