/*  =========================================================================
    act_notify - sd_notify for actd.
    ========================================================================= */

#include <czmq.h>
#include "act_notify.h"
#include "actd/act_json.h"

#ifdef ACTD_SYSTEMD
#include <systemd/sd-daemon.h>
#else
//  Built without libsystemd: nothing to tell
static int sd_notifyf (int unset, const char *format, ...) { return 0; }
static int sd_watchdog_enabled (int unset, uint64_t *usec) { return 0; }
#endif

static long long s_watchdog_at;         //  Next WATCHDOG=1 due
static long long s_status_at;           //  Next STATUS= due
static uint64_t s_watchdog_usec;        //  WatchdogSec= in us, 0: no watchdog
static bool s_notify;                   //  Started with a NOTIFY_SOCKET

void
act_notify_ready (const char *status)
{
    //  The environment is read once: the loop ticks at every pass, and
    //  sd_watchdog_enabled costs a getenv and a getpid each time
    s_notify = getenv ("NOTIFY_SOCKET") != NULL;
    if (sd_watchdog_enabled (0, &s_watchdog_usec) <= 0)
        s_watchdog_usec = 0;
    sd_notifyf (0, "READY=1\nSTATUS=%s\nMAINPID=%d", status, (int) getpid ());
}

void
act_notify_tick (char *(*summary) (void *), void *arg)
{
    if (!s_notify)
        return;
    long long now = act_clock_ms ();
    if (s_watchdog_usec && now >= s_watchdog_at) {
        sd_notifyf (0, "WATCHDOG=1");
        s_watchdog_at = now + (long long) (s_watchdog_usec / 2000);
    }
    if (now >= s_status_at) {
        char *status = summary (arg);
        sd_notifyf (0, "STATUS=%s", status);
        free (status);
        s_status_at = now + 1000;
    }
}

void
act_notify_stopping (const char *status)
{
    sd_notifyf (0, "STOPPING=1\nSTATUS=%s", status);
}

void
act_notify_progress (const char *status, long long extend_ms, void *arg)
{
    sd_notifyf (0, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=%s",
                (unsigned long long) extend_ms * 1000, status);
}

long long
act_notify_progress_ms (void)
{
    const char *test = getenv ("ACTD_TEST_PROGRESS_MS");
    return test? atoll (test): 5000;
}
