package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Tokyo without the system's zone files

	"github.com/redis/go-redis/v9"
)

// quietDialLogger is go-redis's logger for this package's tests: the fault
// tests stop Redis on purpose, and go-redis logs every failed dial of its
// pool; those lines are dropped, anything else is logged as go-redis would.
type quietDialLogger struct{ l *log.Logger }

func (q quietDialLogger) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "failed to dial") {
		return
	}
	_ = q.l.Output(2, msg)
}

// TestMain runs every test of the package with the process's local time
// zone set to Asia/Tokyo (UTC+9): a quota period, usage day or
// rate-limit header computed from local time instead of UTC would be off by
// nine hours and fail the cases. It is set before any test starts, so no
// goroutine reads time.Local while it changes.
//
// With TOLLGATE_TEST_RUN_MAIN=1 the test binary is tollgate itself: it
// runs main with the arguments after "--" (binary_test.go runs it so).
func TestMain(m *testing.M) {
	if os.Getenv("TOLLGATE_TEST_RUN_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"tollgate"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		panic(err)
	}
	time.Local = tokyo
	redis.SetLogger(quietDialLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	os.Exit(m.Run())
}
