package postgres

import (
	"encoding/base64"

	"tollgate/plans"
)

// Page sizes: the default when the caller gives none and the maximum.
const (
	defaultLimit = 25
	maxLimit     = 500
)

// pageArgs decodes p into the id to list after ("" for the first page) and
// the page size (25 when unset, capped at 500). A position that this store
// did not produce is 400 naming "position".
func pageArgs(p plans.Page) (after string, limit int, err error) {
	limit = p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	if p.Position == "" {
		return "", limit, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(p.Position)
	if err != nil || len(b) == 0 {
		return "", 0, plans.Invalid("position", "Invalid position")
	}
	return string(b), limit, nil
}

// cut trims items, fetched with limit+1 rows, to limit and returns the
// position of the next page ("" when no more remain). The page is never
// nil, so an empty list encodes as [].
func cut[T any](items []T, limit int, id func(T) string) ([]T, string) {
	if items == nil {
		items = []T{}
	}
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, base64.RawURLEncoding.EncodeToString([]byte(id(items[limit-1])))
}
