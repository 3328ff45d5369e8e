package main

import (
	"os"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Tokyo without the system's zone files
)

// TestMain runs every test of the package with the process's local time
// zone set to Asia/Tokyo (UTC+9; BC-15): a quota period, usage day or
// rate-limit header computed from local time instead of UTC would be off by
// nine hours and fail the cases. It is set before any test starts, so no
// goroutine reads time.Local while it changes.
func TestMain(m *testing.M) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		panic(err)
	}
	time.Local = tokyo
	os.Exit(m.Run())
}
