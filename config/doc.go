// Package config is tollgate's whole configuration as one document
// (docs/config.md): what `tollgate config dump` writes and `config plan`
// and `config apply` compare with what is stored. It reads the current
// state from the store (Read), normalises both sides the same way so that
// defaults never show as changes, computes the changes (Plan) and makes
// them (Apply) through the store's own operations, which the caller runs
// in one transaction.
//
// Items are matched by id when the document gives one that exists, else
// by name, so the same file sets up a fresh stack. Fields of an item in
// the document are authoritative (its tags, a key's plans, a plan's api
// stages); an item missing from the document is deleted only when
// pruning.
package config
