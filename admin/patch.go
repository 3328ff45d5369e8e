package admin

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"tollgate/plans"
)

// MaxPatchOperations bounds the operations of one update request.
const MaxPatchOperations = 100

// Patch operation names (RFC 6902 subset AWS uses).
const (
	opAdd     = "add"
	opRemove  = "remove"
	opReplace = "replace"
)

// patchOp is one AWS PatchOperation: {"op","path","value","from"}; value
// is always a string on the wire.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
	From  string `json:"from"`
}

// decodePatch reads {"patchOperations": [...]} (at most 100; ops add,
// remove and replace; every path starting with "/").
func decodePatch(r *http.Request) ([]patchOp, error) {
	var body struct {
		PatchOperations []patchOp `json:"patchOperations"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if len(body.PatchOperations) > MaxPatchOperations {
		return nil, plans.Invalid("patchOperations", "at most %d patch operations are allowed, got %d", MaxPatchOperations, len(body.PatchOperations))
	}
	for _, op := range body.PatchOperations {
		switch op.Op {
		case opAdd, opRemove, opReplace:
		default:
			return nil, plans.Invalid("patchOperations.op", "patch op %q is not supported: use add, remove or replace", op.Op)
		}
		if !strings.HasPrefix(op.Path, "/") {
			return nil, plans.Invalid("patchOperations.path", "patch path %q must start with /", op.Path)
		}
	}
	return body.PatchOperations, nil
}

// badPath is the 400 for a path (or op on a path) the resource does not have.
func badPath(op patchOp) error {
	field := op.Path
	if field == "" {
		field = "patchOperations.path"
	}
	return plans.Invalid(field, "invalid patch path %q for op %q", op.Path, op.Op)
}

// needOp returns badPath unless op.Op is one of ops.
func needOp(op patchOp, ops ...string) error {
	for _, o := range ops {
		if op.Op == o {
			return nil
		}
	}
	return badPath(op)
}

// parseBool reads a patch value "true" or "false" (any case).
func parseBool(op patchOp) (bool, error) {
	switch strings.ToLower(op.Value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, plans.Invalid(op.Path, "%s: value %q must be true or false", op.Path, op.Value)
}

// parseInt32 reads a patch value as an int32 written without a fraction.
func parseInt32(op patchOp) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(op.Value), 10, 32)
	if err != nil {
		return 0, plans.Invalid(op.Path, "%s: value %q must be a 32-bit integer without a fraction", op.Path, op.Value)
	}
	return int32(n), nil
}

// parseDouble reads a patch value as a finite double.
func parseDouble(op patchOp) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(op.Value), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, plans.Invalid(op.Path, "%s: value %q must be a finite number", op.Path, op.Value)
	}
	return f, nil
}

// setString applies replace (or add) of a string field; remove clears it.
func setString(op patchOp, dst *string) error {
	if op.Op == opRemove {
		*dst = ""
		return nil
	}
	*dst = op.Value
	return nil
}

// setBool applies replace of a boolean field.
func setBool(op patchOp, dst *bool) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	b, err := parseBool(op)
	if err != nil {
		return err
	}
	*dst = b
	return nil
}

// setInt32 applies replace of an int32 field.
func setInt32(op patchOp, dst *int32) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	n, err := parseInt32(op)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}

// setDouble applies replace of a double field.
func setDouble(op patchOp, dst *float64) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	f, err := parseDouble(op)
	if err != nil {
		return err
	}
	*dst = f
	return nil
}

// setEnum applies replace of a string field that takes one of allowed.
func setEnum(op patchOp, dst *string, allowed ...string) error {
	if err := needOp(op, opReplace, opAdd); err != nil {
		return err
	}
	for _, a := range allowed {
		if op.Value == a {
			*dst = a
			return nil
		}
	}
	return plans.Invalid(op.Path, "%s: value %q must be one of %s", op.Path, op.Value, strings.Join(allowed, ", "))
}

// applyAll applies every op with apply, stopping at the first error.
func applyAll(ops []patchOp, apply func(patchOp) error) error {
	for _, op := range ops {
		if err := apply(op); err != nil {
			return err
		}
	}
	return nil
}

// patchRecord is the shape every Update* operation shares: decode the
// request's patchOperations, let update load the record inside its store
// transaction and call apply with all of them (apply leaves the record
// valid as a whole or returns the error), then publish. op names the
// operation in the publish log.
func patchRecord[T any](s *Server, r *http.Request, op string,
	update func(fn func(*T) error) (*T, error), apply func(*T, []patchOp) error) (*T, error) {
	ops, err := decodePatch(r)
	if err != nil {
		return nil, err
	}
	rec, err := update(func(t *T) error { return apply(t, ops) })
	if err != nil {
		return nil, err
	}
	s.published(r.Context(), op)
	return rec, nil
}

// each turns a one-operation patch function into one for all operations,
// applied in order.
func each[T any](apply func(*T, patchOp) error) func(*T, []patchOp) error {
	return func(t *T, ops []patchOp) error {
		return applyAll(ops, func(op patchOp) error { return apply(t, op) })
	}
}
