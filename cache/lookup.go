package cache

// Lookup is one read of a stage's response cache, made by the engine in
// the round trip of the request's limit decision (docs/behaviour.md,
// "Response cache"). The caller fills the inputs, the engine the outputs.
//
// The engine reads the stage's current cache generation with the entry:
// the entry's digest needs a generation before the round trip, so it uses
// the last one the node saw; when the round trip shows a flush since, the
// entry read is dropped and read again under the new generation. So every
// request that starts after a flush's 202 misses, on any node.
type Lookup struct {
	// Params are the method's cache key parameters (ParseParams).
	Params []Param
	// Request holds the parts of the request the digest is built from;
	// the engine sets its Generation.
	Request Request
	// Refresh asks for the generation only: the caller replaces the entry
	// (an authorized "Cache-Control: max-age=0").
	Refresh bool

	// Digest names the entry under the stage's current generation (see
	// Digest): the single-flight key and where Fill stores. "" when the
	// generation could not be read: then nothing may be served or stored.
	Digest string
	// Entry is the stored variant that matches Request.Header, nil when
	// there is none. It may be stale: check Entry.Fresh.
	Entry *Entry
	// Err is why the cache could not be read (the generation, when Digest
	// is "", else the entry): the request is served without the cache and
	// nothing is stored.
	Err error
}
