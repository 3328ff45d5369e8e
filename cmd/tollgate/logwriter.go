package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logFlushInterval is the longest a log line waits in logWriter's buffer.
const logFlushInterval = 100 * time.Millisecond

// logWriter buffers log output (the access log writes one line per
// request) and writes it out when 64 KiB have gathered, logFlushInterval
// after the first unwritten line, and on Flush: one write system call for
// many lines instead of one each, which the gateway's profile showed as
// its largest avoidable cost. It needs no goroutine: a timer is armed
// when the buffer stops being empty. Safe for concurrent use; write
// errors are dropped, as a log has nowhere to report them.
type logWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	armed bool
}

// newLogWriter returns a logWriter in front of w.
func newLogWriter(w io.Writer) *logWriter {
	return &logWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Write buffers p (one log record, written whole).
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed {
		l.armed = true
		time.AfterFunc(logFlushInterval, l.Flush)
	}
	if l.w.Available() < len(p) {
		_ = l.w.Flush()
	}
	_, _ = l.w.Write(p)
	return len(p), nil
}

// Flush writes out everything buffered.
func (l *logWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Flush()
	l.armed = false
}
