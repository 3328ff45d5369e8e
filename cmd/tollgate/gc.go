package main

import "runtime/debug"

// gcPercent is the garbage collector's target (the GOGC percentage) of a
// node when the environment sets no GOGC: a gateway keeps a small live
// heap and allocates for every request, so Go's default of 100 collects
// several times a second under load. docs/operations.md ("Memory and garbage collection") gives
// what it costs in memory and what it saves in CPU.
const gcPercent = 400

// tuneGC sets the collector's target to gcPercent unless GOGC is set;
// GOMEMLIMIT, when set, bounds the heap as usual.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
