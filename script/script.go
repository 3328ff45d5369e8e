// Package script is the limiter Redis's Lua library and its wire format,
// shared by the engine (a gateway node's Redis) and package usage (the
// admin's reads and writes of usage).
//
// The library is a fixed list of files (Files), concatenated in that
// order into one script whose last file dispatches on ARGV[1], the
// operation (Op*). Each file's header names what it takes from the files
// before it; nothing is spliced or rewritten. The wire format of every
// operation's arguments and replies and of every stored state is declared
// once, in wire.go; the Go codecs (wire_gen.go) and the Lua prelude
// (lua/wire.lua) are generated from it.
//
// The package holds no Redis client: callers wrap Source in
// redis.NewScript and run it with EVALSHA.
package script

import (
	"embed"
	"fmt"
	"strings"
	"time"

	"tollgate/calendar"
)

// Operations of the library (its ARGV[1]); the files that implement them
// document their KEYS and arguments.
const (
	OpDecide  = "decide"  // decisions, with charges: fail-open admissions and settles (decide.lua)
	OpRefund  = "refund"  // give back shared bucket tokens (give.lua)
	OpUnlease = "unlease" // end capacity leases (give.lua)
	OpUnrules = "unrules" // undo rule charges, end CONCURRENCY requests (give.lua)
	OpRenew   = "renew"   // renew CONCURRENCY members (give.lua)
	OpSettle  = "settle"  // give a customer quota's units back (Redis Cluster, usage.lua)
	OpQuota   = "quota"   // read or set a quota (usage.lua)
	OpHold    = "hold"    // hold changed usage for the ledger (usage.lua)
)

// Files are the library's files, in the order they are concatenated.
var Files = []string{
	"wire.lua",     // generated: the wire format
	"clock.lua",    // now, days, calendar periods
	"bucket.lua",   // token buckets
	"usage.lua",    // usage counts, change sets, restore gate; ops settle, quota, hold
	"rules.lua",    // rate-limit rule algorithms
	"decide.lua",   // op decide
	"give.lua",     // ops refund, unlease, unrules, renew
	"dispatch.lua", // ARGV[1] → operation
}

//go:embed lua/*.lua
var files embed.FS

// Source is the library: Files concatenated in order.
var Source = assemble()

func assemble() string {
	var b strings.Builder
	for _, name := range Files {
		src, err := files.ReadFile("lua/" + name)
		if err != nil {
			panic("script: " + err.Error()) // a broken build: the list names a file that is not embedded
		}
		fmt.Fprintf(&b, "-- %s\n", name)
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}

// shortError is the error of a Decode of fewer bytes than its layout.
func shortError(layout string, got, want int) error {
	return fmt.Errorf("script: %s: %d bytes, want %d", layout, got, want)
}

// markError is the error of a Decode of a stored state of another kind.
func markError(layout string, got, want byte) error {
	return fmt.Errorf("script: %s: mark %d, want %d", layout, got, want)
}

// u64 reads n bytes little-endian at off of s.
func u64(s string, off, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(s[off+i])
	}
	return v
}

// periods is the one table between a quota period's name (plans.Quota,
// AWS's) and the script's code (wire.go's Period*).
var periods = [...]string{PeriodDay: "DAY", PeriodWeek: "WEEK", PeriodMonth: "MONTH"}

// PeriodCode returns the script's code of the quota period named name;
// ok is false (and the code DAY's) for any other name.
func PeriodCode(name string) (code uint8, ok bool) {
	for c, n := range periods {
		if n == name {
			return uint8(c), true
		}
	}
	return PeriodDay, false
}

// TableOf returns the table (PeriodBounds) of calendar c around at: the
// period holding at and its neighbours.
func TableOf(c calendar.Calendar, at time.Time) PeriodBounds {
	from, start, end, to := c.Table(at)
	return PeriodBounds{FromS: from.Unix(), StartS: start.Unix(), EndS: end.Unix(), ToS: to.Unix()}
}
