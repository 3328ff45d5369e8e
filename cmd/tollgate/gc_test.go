package main

import (
	"runtime/debug"
	"testing"
)

func TestGCTargetIsRaisedOnlyWithoutGOGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	tuneGC(func(string) string { return "50" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: got %d, want the runtime's own 100", got)
	}
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC: got %d, want %d", got, gcPercent)
	}
}
