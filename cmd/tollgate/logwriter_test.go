package main

import (
	"strings"
	"testing"
	"time"

	"tollgate/internal/waittest"
)

func TestLogWriter(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines int
		size  int
	}{
		{"one line, written by the timer", 1, 10},
		{"more than the buffer, written as it fills", 100, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out logBuffer
			w := newLogWriter(&out)
			line := strings.Repeat("x", c.size-1) + "\n"
			for range c.lines {
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Fatalf("Write: got %d, %v, want %d, nil", n, err, len(line))
				}
			}
			want := strings.Repeat(line, c.lines)
			waittest.Poll(5*time.Second, func() bool { return out.String() == want })
			if got := out.String(); got != want {
				t.Errorf("got %d bytes written, want %d", len(got), len(want))
			}
		})
	}
}

func TestLogWriterFlush(t *testing.T) {
	var out logBuffer
	w := newLogWriter(&out)
	_, _ = w.Write([]byte("line\n"))
	w.Flush()
	if got := out.String(); got != "line\n" {
		t.Errorf("after Flush: got %q, want %q", got, "line\n")
	}
}
