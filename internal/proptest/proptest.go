// Package proptest runs property tests whose operations are decoded from
// bytes: the same bytes, drawn from a seed or handed over by the fuzzer,
// replay the same sequence, and the first mismatch fails the test with the
// sequence that led to it. The one harness of the tree's model tests.
package proptest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Ops is the byte stream a sequence is decoded from.
type Ops struct {
	b   []byte
	pos int
}

// NewOps returns the stream of b.
func NewOps(b []byte) *Ops { return &Ops{b: b} }

// Next returns the next byte, or 0 once the stream is used up.
func (o *Ops) Next() byte {
	if o.pos >= len(o.b) {
		return 0
	}
	o.pos++
	return o.b[o.pos-1]
}

// More reports whether bytes are left.
func (o *Ops) More() bool { return o.pos < len(o.b) }

// Pick returns the element of xs that b chooses (b modulo len(xs)).
func Pick[T any](xs []T, b byte) T { return xs[int(b)%len(xs)] }

// Run calls step until ops is used up, then final (when not nil). The
// first non-empty answer is a mismatch: it fails tb with log, the
// sequence as the steps described it.
func Run(tb testing.TB, ops *Ops, log *[]string, step, final func() string) {
	tb.Helper()
	for ops.More() {
		if diff := step(); diff != "" {
			tb.Fatalf("step %d: %s\nsequence:\n%s", len(*log), diff, strings.Join(*log, "\n"))
		}
	}
	if final == nil {
		return
	}
	if diff := final(); diff != "" {
		tb.Fatalf("%s\nsequence:\n%s", diff, strings.Join(*log, "\n"))
	}
}

// EachSeed runs check in parallel subtests seed0 … seed<seeds-1>, each
// with size bytes drawn from a PCG of that seed and stream, so a failing
// seed replays alone (go test -run '/seed7$').
func EachSeed(t *testing.T, stream uint64, seeds, size int, check func(t *testing.T, ops []byte)) {
	t.Parallel()
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(seed), stream))
			ops := make([]byte, size)
			for i := range ops {
				ops[i] = byte(r.UintN(256))
			}
			check(t, ops)
		})
	}
}
