package admin

import (
	"net/http"
	"strings"

	"tollgate/plans"
)

// updateStage: PATCH /restapis/{id}/stages/{name} → 200 Stage. Paths:
// /description, /deploymentId, /cacheClusterEnabled, /cacheClusterSize,
// /tracingEnabled, /variables/{name} (add|replace|remove), and method
// settings /{resourcePath}/{METHOD}/{group}/{field} (see patchMethodSetting).
// Enabling, disabling or resizing the cache cluster flushes the stage cache.
func (s *Server) updateStage(w http.ResponseWriter, r *http.Request) error {
	apiID, name := param(r, "restApiId"), param(r, "stageName")
	var flush bool
	st, err := patchRecord(s, r, "UpdateStage", func(fn func(*plans.Stage) error) (*plans.Stage, error) {
		return s.store.UpdateStage(r.Context(), apiID, name, fn)
	}, func(st *plans.Stage, ops []patchOp) error {
		before := *st
		if err := each(patchStage)(st, ops); err != nil {
			return err
		}
		flush = settleCacheCluster(&before, st)
		return nil
	})
	if err != nil {
		return err
	}
	s.flushAfterResize(r, apiID, name, flush)
	writeJSON(w, http.StatusOK, st)
	return nil
}

// patchStage applies one operation to st.
func patchStage(st *plans.Stage, op patchOp) error {
	switch op.Path {
	case "/description":
		return setString(op, &st.Description)
	case "/deploymentId":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		if !plans.ValidID(op.Value) {
			return plans.Invalid(op.Path, "deploymentId %q is not a deployment id", op.Value)
		}
		st.DeploymentID = op.Value
		return nil
	case "/cacheClusterEnabled":
		return setBool(op, &st.CacheClusterEnabled)
	case "/cacheClusterSize":
		if err := needOp(op, opReplace); err != nil {
			return err
		}
		st.CacheClusterSize = op.Value
		return nil
	case "/tracingEnabled":
		return setBool(op, &st.TracingEnabled)
	}
	if v, ok := strings.CutPrefix(op.Path, "/variables/"); ok {
		return patchVariable(st, op, v)
	}
	return patchMethodSetting(st, op)
}

// patchVariable adds, replaces or removes the stage variable name.
func patchVariable(st *plans.Stage, op patchOp, name string) error {
	if name == "" {
		return badPath(op)
	}
	if op.Op == opRemove {
		delete(st.Variables, name)
		return nil
	}
	if st.Variables == nil {
		st.Variables = map[string]string{}
	}
	st.Variables[name] = op.Value
	return nil
}

// patchMethodSetting applies a method settings path:
// /{resourcePath}/{METHOD}/{group}/{field}, resourcePath "*" (with METHOD
// "*") for the "*/*" entry or "~1"-escaped ("/~1pets~1{petId}/GET/throttling/rateLimit").
// remove of /{resourcePath}/{METHOD} deletes the entry; remove of a field
// resets it to what a new entry starts with. A new entry starts as
// st.NewMethodSetting().
func patchMethodSetting(st *plans.Stage, op patchOp) error {
	parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
	if len(parts) != 2 && len(parts) != 4 {
		return badPath(op)
	}
	key, ok := methodSettingKey(parts[0], parts[1])
	if !ok {
		return badPath(op)
	}
	if len(parts) == 2 {
		if op.Op != opRemove {
			return badPath(op)
		}
		delete(st.MethodSettings, key)
		return nil
	}
	ms, exists := st.MethodSettings[key]
	if !exists {
		ms = st.NewMethodSetting()
	}
	field, ok := methodFields[parts[2]+"/"+parts[3]]
	if !ok {
		return badPath(op)
	}
	if op.Op == opRemove {
		field.reset(&ms, st.NewMethodSetting())
	} else if err := field.set(&ms, op); err != nil {
		return err
	}
	if st.MethodSettings == nil {
		st.MethodSettings = map[string]plans.MethodSetting{}
	}
	st.MethodSettings[key] = ms
	return nil
}

// methodSettingKey turns the path's resource and method segments into a
// methodSettings key: "*","*" → "*/*"; "~1pets","GET" → "~1pets/GET".
func methodSettingKey(resource, method string) (string, bool) {
	if resource == "*" || method == "*" {
		return plans.AllMethods, resource == "*" && method == "*"
	}
	if !strings.HasPrefix(resource, "~1") || !plans.ValidHTTPMethod(method) {
		return "", false
	}
	return resource + "/" + method, true
}

// methodField is one group/field of a method setting patch path: how to
// set it from a patch value and how to reset it to a fresh entry's value.
type methodField struct {
	set   func(ms *plans.MethodSetting, op patchOp) error
	reset func(ms *plans.MethodSetting, fresh plans.MethodSetting)
}

// methodFields maps "group/field" of a method settings patch path to the
// MethodSetting field it changes.
var methodFields = map[string]methodField{
	"throttling/rateLimit": {
		func(ms *plans.MethodSetting, op patchOp) error { return setDouble(op, &ms.ThrottlingRateLimit) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.ThrottlingRateLimit = f.ThrottlingRateLimit }},
	"throttling/burstLimit": {
		func(ms *plans.MethodSetting, op patchOp) error { return setInt32(op, &ms.ThrottlingBurstLimit) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.ThrottlingBurstLimit = f.ThrottlingBurstLimit }},
	"caching/enabled": {
		func(ms *plans.MethodSetting, op patchOp) error { return setBool(op, &ms.CachingEnabled) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.CachingEnabled = f.CachingEnabled }},
	"caching/ttlInSeconds": {
		func(ms *plans.MethodSetting, op patchOp) error { return setInt32(op, &ms.CacheTTLInSeconds) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.CacheTTLInSeconds = f.CacheTTLInSeconds }},
	"caching/dataEncrypted": {
		func(ms *plans.MethodSetting, op patchOp) error { return setBool(op, &ms.CacheDataEncrypted) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.CacheDataEncrypted = f.CacheDataEncrypted }},
	"caching/requireAuthorizationForCacheControl": {
		func(ms *plans.MethodSetting, op patchOp) error {
			return setBool(op, &ms.RequireAuthorizationForCacheControl)
		},
		func(ms *plans.MethodSetting, f plans.MethodSetting) {
			ms.RequireAuthorizationForCacheControl = f.RequireAuthorizationForCacheControl
		}},
	"caching/unauthorizedCacheControlHeaderStrategy": {
		func(ms *plans.MethodSetting, op patchOp) error {
			return setEnum(op, &ms.UnauthorizedCacheControlHeaderStrategy,
				plans.FailWith403, plans.SucceedWithResponseHeader, plans.SucceedWithoutResponseHeader)
		},
		func(ms *plans.MethodSetting, f plans.MethodSetting) {
			ms.UnauthorizedCacheControlHeaderStrategy = f.UnauthorizedCacheControlHeaderStrategy
		}},
	"metrics/enabled": {
		func(ms *plans.MethodSetting, op patchOp) error { return setBool(op, &ms.MetricsEnabled) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.MetricsEnabled = f.MetricsEnabled }},
	"logging/loglevel": {
		func(ms *plans.MethodSetting, op patchOp) error {
			return setEnum(op, &ms.LoggingLevel, "OFF", "ERROR", "INFO")
		},
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.LoggingLevel = f.LoggingLevel }},
	"logging/dataTrace": {
		func(ms *plans.MethodSetting, op patchOp) error { return setBool(op, &ms.DataTraceEnabled) },
		func(ms *plans.MethodSetting, f plans.MethodSetting) { ms.DataTraceEnabled = f.DataTraceEnabled }},
}
