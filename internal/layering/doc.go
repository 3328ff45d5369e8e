// Package layering holds the test that keeps tollgate's package
// boundaries (docs/architecture.md): who may import whom. It has no code
// of its own.
package layering
