package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"tollgate/plans"
)

func (s *Server) tagRoutes(r chi.Router) {
	r.Put("/tags/*", s.handle(s.tagResource))
	r.Post("/tags/*", s.handle(s.tagResource))
	r.Get("/tags/*", s.handle(s.getTags))
	r.Delete("/tags/*", s.handle(s.untagResource))
}

// taggable is a resource an ARN names: how to read its tags and how to
// change them inside the store's update transaction (which validates the
// result and, for API keys, republishes the key's record).
type taggable struct {
	get    func(ctx context.Context) (map[string]string, error)
	update func(ctx context.Context, fn func(map[string]string) map[string]string) error
}

// resourceARN reads the route's ARN: arn:<partition>:apigateway:<region>::<path>
// with path /restapis/{id}, /restapis/{id}/stages/{name}, /usageplans/{id},
// /apikeys/{id} or /domainnames/{name} (any region; SDKs send it percent-encoded as one path
// segment). Anything else is 400 naming resourceArn.
func (s *Server) resourceARN(r *http.Request) (taggable, error) {
	raw := chi.URLParam(r, "*")
	arn, err := url.PathUnescape(raw)
	if err != nil {
		arn = raw
	}
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "apigateway" || parts[4] != "" {
		return taggable{}, badARN(arn)
	}
	seg := splitPath(parts[5])
	switch {
	case len(seg) == 2 && seg[0] == "restapis":
		return s.apiTags(seg[1]), nil
	case len(seg) == 4 && seg[0] == "restapis" && seg[2] == "stages":
		return s.stageTags(seg[1], seg[3]), nil
	case len(seg) == 2 && seg[0] == "usageplans":
		return s.planTags(seg[1]), nil
	case len(seg) == 2 && seg[0] == "apikeys":
		return s.keyTags(seg[1]), nil
	case len(seg) == 2 && seg[0] == "domainnames":
		return s.domainTags(strings.ToLower(seg[1])), nil
	}
	return taggable{}, badARN(arn)
}

func badARN(arn string) error {
	return plans.Invalid("resourceArn", "resourceArn %q must be arn:aws:apigateway:<region>::/restapis/{id}, /restapis/{id}/stages/{name}, /usageplans/{id}, /apikeys/{id} or /domainnames/{name}", arn)
}

func (s *Server) apiTags(id string) taggable {
	return taggable{
		get: func(ctx context.Context) (map[string]string, error) {
			a, err := s.store.GetRestApi(ctx, id)
			return tagsOf(a, err, func(a *plans.RestApi) map[string]string { return a.Tags })
		},
		update: func(ctx context.Context, fn func(map[string]string) map[string]string) error {
			_, err := s.store.UpdateRestApi(ctx, id, func(a *plans.RestApi) error { a.Tags = fn(a.Tags); return nil })
			return err
		},
	}
}

func (s *Server) stageTags(apiID, name string) taggable {
	return taggable{
		get: func(ctx context.Context) (map[string]string, error) {
			st, err := s.store.GetStage(ctx, apiID, name)
			return tagsOf(st, err, func(st *plans.Stage) map[string]string { return st.Tags })
		},
		update: func(ctx context.Context, fn func(map[string]string) map[string]string) error {
			_, err := s.store.UpdateStage(ctx, apiID, name, func(st *plans.Stage) error { st.Tags = fn(st.Tags); return nil })
			return err
		},
	}
}

func (s *Server) planTags(id string) taggable {
	return taggable{
		get: func(ctx context.Context) (map[string]string, error) {
			p, err := s.store.GetUsagePlan(ctx, id)
			return tagsOf(p, err, func(p *plans.UsagePlan) map[string]string { return p.Tags })
		},
		update: func(ctx context.Context, fn func(map[string]string) map[string]string) error {
			_, err := s.store.UpdateUsagePlan(ctx, id, func(p *plans.UsagePlan) error { p.Tags = fn(p.Tags); return nil })
			return err
		},
	}
}

func (s *Server) keyTags(id string) taggable {
	return taggable{
		get: func(ctx context.Context) (map[string]string, error) {
			k, err := s.store.GetApiKey(ctx, id)
			return tagsOf(k, err, func(k *plans.ApiKey) map[string]string { return k.Tags })
		},
		update: func(ctx context.Context, fn func(map[string]string) map[string]string) error {
			_, err := s.store.UpdateApiKey(ctx, id, func(k *plans.ApiKey) error { k.Tags = fn(k.Tags); return nil })
			return err
		},
	}
}

func (s *Server) domainTags(name string) taggable {
	return taggable{
		get: func(ctx context.Context) (map[string]string, error) {
			d, err := s.store.GetDomainName(ctx, name)
			return tagsOf(d, err, func(d *plans.DomainName) map[string]string { return d.Tags })
		},
		update: func(ctx context.Context, fn func(map[string]string) map[string]string) error {
			_, err := s.store.UpdateDomainName(ctx, name, func(d *plans.DomainName, _ *plans.DomainCertificate) error {
				d.Tags = fn(d.Tags)
				return nil
			})
			return err
		},
	}
}

// tagsOf returns the tags of a loaded record, never nil.
func tagsOf[T any](v *T, err error, tags func(*T) map[string]string) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	if t := tags(v); t != nil {
		return t, nil
	}
	return map[string]string{}, nil
}

// tagsBody is TagResource's body and GetTags' answer.
type tagsBody struct {
	Tags map[string]string `json:"tags"`
}

// tagResource: PUT (or POST) /tags/{arn} {"tags": {...}} → 204. The tags
// are added to the resource's, replacing values of the same keys; keys
// starting with "aws:" are reserved (400). On an API key, a change of
// tollgate:invalidate-cache reaches the gateway with the key's record.
func (s *Server) tagResource(w http.ResponseWriter, r *http.Request) error {
	res, err := s.resourceARN(r)
	if err != nil {
		return err
	}
	var in tagsBody
	if err := decode(r, &in); err != nil {
		return err
	}
	for k := range in.Tags {
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return plans.Invalid("tags", "tag key %q: the aws: prefix is reserved", k)
		}
	}
	err = res.update(r.Context(), func(tags map[string]string) map[string]string {
		if tags == nil {
			tags = map[string]string{}
		}
		for k, v := range in.Tags {
			tags[k] = v
		}
		return tags
	})
	if err != nil {
		return err
	}
	s.published(r.Context(), "TagResource")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// untagResource: DELETE /tags/{arn}?tagKeys=a&tagKeys=b → 204 (keys the
// resource does not have are ignored).
func (s *Server) untagResource(w http.ResponseWriter, r *http.Request) error {
	res, err := s.resourceARN(r)
	if err != nil {
		return err
	}
	keys := r.URL.Query()["tagKeys"]
	if len(keys) == 0 {
		return plans.Invalid("tagKeys", "tagKeys is required")
	}
	err = res.update(r.Context(), func(tags map[string]string) map[string]string {
		for _, k := range keys {
			delete(tags, k)
		}
		return tags
	})
	if err != nil {
		return err
	}
	s.published(r.Context(), "UntagResource")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getTags: GET /tags/{arn} → 200 {"tags": {...}}.
func (s *Server) getTags(w http.ResponseWriter, r *http.Request) error {
	res, err := s.resourceARN(r)
	if err != nil {
		return err
	}
	tags, err := res.get(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tagsBody{Tags: tags})
	return nil
}
