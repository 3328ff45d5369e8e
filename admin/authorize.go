package admin

import (
	"context"
	"fmt"
	"net/http"
)

// typeAccessDenied is the x-amzn-ErrorType of a refusal by role.
const typeAccessDenied = "AccessDeniedException"

// route is what authorize learnt of the request's route, for the
// wrappers after it (the audit log).
type route struct {
	Pattern string
	Rule    rule
	Op      string // the operation (Rule.ImportOp for an import)
	Area    area   // Rule.Area, resolved for tag routes
	ARN     string // the ARN a tag route names, as its path has it
}

type routeKey struct{}

// routeFrom returns the request's route; ok is false for public routes
// and paths no route serves.
func routeFrom(ctx context.Context) (route, bool) {
	rt, ok := ctx.Value(routeKey{}).(route)
	return rt, ok
}

// authorize refuses what the principal's role may not do: 403
// AccessDeniedException naming the operation and the missing
// permission, from the route's rule (routeRules). It is the one place
// roles are checked; handlers never check them.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pattern, ru, params, ok := s.routeOf(r)
		if !ok || ru.Public {
			next.ServeHTTP(w, r)
			return
		}
		rt := route{Pattern: pattern, Rule: ru, Op: ru.Op, Area: ru.Area}
		if ru.Area == areaByARN {
			rt.ARN = params.URLParam("*")
			rt.Area = areaOfARN(rt.ARN)
		}
		if ru.ImportOp != "" && r.URL.Query().Get("mode") != "" {
			rt.Op = ru.ImportOp
		}
		p := principalOf(r.Context())
		if msg := refusal(p, rt); msg != "" {
			writeAWSError(w, http.StatusForbidden, typeAccessDenied, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
	})
}

// refusal returns why p may not call rt ("" when it may).
func refusal(p principal, rt route) string {
	a := rt.Area
	switch {
	case !may(p.Role, a, rt.Rule.Write):
		verb := "read"
		if rt.Rule.Write {
			verb = "change"
		}
		return fmt.Sprintf("User: %s is not authorized to perform: apigateway:%s (role %s may not %s %s)", p.Name, rt.Op, p.Role, verb, a)
	case rt.Rule.KeyValues && !mayReadKeyValues(p.Role):
		return fmt.Sprintf("User: %s is not authorized to perform: apigateway:%s (role %s may not read API key values)", p.Name, rt.Op, p.Role)
	}
	return ""
}
