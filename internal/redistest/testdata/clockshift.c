/*
 * clockshift: preloaded into a redis-server of a test's own (redistest.ClockEnv),
 * it moves the server's wall clock (CLOCK_REALTIME, gettimeofday, time) by
 * REDISTEST_CLOCK_OFFSET_NS nanoseconds, so TIME, script time and key expiry
 * are days away from the test's nodes. The monotonic clocks stay true.
 *
 * libfaketime would be the library for this, but it cannot start inside a
 * redis-server that allocates with jemalloc (wolfcw/libfaketime#130): both
 * call the other while initialising. This shim calls the kernel directly and
 * allocates nothing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/*
 * With REDISTEST_CLOCK_FILE, the offset is the little-endian int64 at the
 * start of that file (8 bytes), mapped shared once and read on every call:
 * a test moves the server's clock while it runs by writing it in place
 * (redistest.StepClock).
 */
static volatile long long *mapped;

static long long offset_ns(void) {
	static int read;
	static long long off;
	if (!read) {
		const char *s = getenv("REDISTEST_CLOCK_OFFSET_NS");
		const char *f = getenv("REDISTEST_CLOCK_FILE");
		off = s ? atoll(s) : 0;
		if (f) {
			int fd = (int)syscall(SYS_openat, AT_FDCWD, f, O_RDONLY);
			if (fd >= 0) {
				void *p = (void *)syscall(SYS_mmap, NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
				if (p != MAP_FAILED) {
					mapped = p;
				}
				syscall(SYS_close, fd);
			}
		}
		read = 1;
	}
	if (!mapped) {
		return off;
	}
	for (;;) { /* twice the same: not torn by a write in between */
		long long a = *mapped, b = *mapped;
		if (a == b) {
			return a;
		}
	}
}

static void shift(struct timespec *ts) {
	long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000LL;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	int rc = syscall(SYS_clock_gettime, clk, ts);
	if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
		shift(ts);
	}
	return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
		return -1;
	}
	if (tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}
