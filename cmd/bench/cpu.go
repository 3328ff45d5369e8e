package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTimes returns the CPU time (user + system) each started process has
// used so far, by label; processes whose stat cannot be read are left out.
func (p *procs) cpuTimes() map[string]time.Duration {
	out := make(map[string]time.Duration, len(p.cmds))
	for i, cmd := range p.cmds {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may
		// hold spaces: state is field 3, utime 14, stime 15.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[p.labels[i]] = time.Duration(u+st) * clockTick
	}
	return out
}

// cpuPerRequest formats the CPU each process spent per request between
// two cpuTimes readings, "gateway0 120 redis 40 echo 35" (µs), for the
// processes that took at least 1 µs per request, and returns their sum in
// µs.
func cpuPerRequest(before, after map[string]time.Duration, n int64, order []string) (string, float64) {
	if n <= 0 {
		return "", 0
	}
	var parts []string
	var total float64
	for _, l := range order {
		us := float64(after[l]-before[l]) / float64(time.Microsecond) / float64(n)
		total += us
		if us >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", l, us))
		}
	}
	return strings.Join(parts, " "), total
}
