/*  =========================================================================
    clock_step - an LD_PRELOAD library that steps one process's wall clock,
    for the tests of what a step of the system clock (an NTP step, a VM
    resumed, an admin's typo) does to actd, with no change to the
    machine's own clock.

    ACTD_CLOCK_STEP names a file holding a signed offset in milliseconds,
    read again at most every 10 ms (monotonic). The real-time clock, as
    clock_gettime (CLOCK_REALTIME and _COARSE), gettimeofday and time see
    it, is the real one plus that offset; the monotonic clocks are left
    alone. A pthread_cond_timedwait on a condition of the real-time clock
    ends at its deadline on the stepped clock, as the kernel ends it at a
    real step; one on the monotonic clock is left alone.

    Built without sanitizers: it is loaded before their runtimes (the
    tests set ASAN_OPTIONS verify_asan_link_order=0).
    ========================================================================= */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (s_gettime_fn) (clockid_t, struct timespec *);
typedef int (s_timedwait_fn) (pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

//  libc's clock_gettime
static s_gettime_fn *
s_real_gettime (void)
{
    static s_gettime_fn *real;
    if (!real)
        real = (s_gettime_fn *) dlsym (RTLD_NEXT, "clock_gettime");
    return real;
}

//  The offset (ms) the file gives now: read again when 10 ms have passed
static long long
s_offset_ms (void)
{
    static long long offset, read_at;
    struct timespec now;
    s_real_gettime () (CLOCK_MONOTONIC, &now);
    long long ms = (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (ms >= __atomic_load_n (&read_at, __ATOMIC_RELAXED)) {
        const char *path = getenv ("ACTD_CLOCK_STEP");
        int fd = path? open (path, O_RDONLY | O_CLOEXEC): -1;
        if (fd >= 0) {
            char text [32] = { 0 };
            if (read (fd, text, sizeof text - 1) > 0)
                __atomic_store_n (&offset, atoll (text), __ATOMIC_RELAXED);
            close (fd);
        }
        __atomic_store_n (&read_at, ms + 10, __ATOMIC_RELAXED);
    }
    return __atomic_load_n (&offset, __ATOMIC_RELAXED);
}

//  time moved by ms
static void
s_shift (struct timespec *time, long long ms)
{
    long long ns = (long long) time->tv_nsec + (ms % 1000) * 1000000;
    time->tv_sec += (time_t) (ms / 1000 + (ns < 0? -1: ns >= 1000000000));
    time->tv_nsec = (long) ((ns + 1000000000) % 1000000000);
}

int
clock_gettime (clockid_t clock, struct timespec *time)
{
    int rc = s_real_gettime () (clock, time);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
        s_shift (time, s_offset_ms ());
    return rc;
}

int
gettimeofday (struct timeval *value, void *zone)
{
    (void) zone;
    struct timespec now;
    clock_gettime (CLOCK_REALTIME, &now);
    value->tv_sec = now.tv_sec;         //  glibc declares it never NULL
    value->tv_usec = now.tv_nsec / 1000;
    return 0;
}

time_t
time (time_t *value)
{
    struct timespec now;
    clock_gettime (CLOCK_REALTIME, &now);
    if (value)
        *value = now.tv_sec;
    return now.tv_sec;
}

int
pthread_cond_timedwait (pthread_cond_t *cond, pthread_mutex_t *mutex,
                        const struct timespec *deadline)
{
    static s_timedwait_fn *real;
    if (!real)
        real = (s_timedwait_fn *) dlvsym (RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    //  glibc keeps a condition's clock in bit 1 of __wrefs (set: monotonic)
    if (cond->__data.__wrefs & 2)
        return real (cond, mutex, deadline);
    //  The real-time clock: waits of at most 20 ms, each judged on the
    //  stepped clock
    while (true) {
        struct timespec now;
        clock_gettime (CLOCK_REALTIME, &now);
        long long left = (long long) (deadline->tv_sec - now.tv_sec) * 1000
                       + (deadline->tv_nsec - now.tv_nsec) / 1000000;
        if (left <= 0)
            return ETIMEDOUT;
        struct timespec slice;
        s_real_gettime () (CLOCK_REALTIME, &slice);
        s_shift (&slice, left < 20? left: 20);
        int rc = real (cond, mutex, &slice);
        if (rc != ETIMEDOUT)
            return rc;
    }
}
