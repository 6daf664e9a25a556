/*  =========================================================================
    act_notify - tell systemd how actd is doing (sd_notify): READY=1 once
    the sockets are bound and the store is open (before that, while a store
    migrates, STATUS= and EXTEND_TIMEOUT_USEC=), STATUS= lines, WATCHDOG=1
    pings while the loop turns, STOPPING=1. Does nothing when actd does not
    run under systemd (no NOTIFY_SOCKET).
    ========================================================================= */

#ifndef ACT_NOTIFY_H_INCLUDED
#define ACT_NOTIFY_H_INCLUDED

//  READY=1 with a status line; reads the environment (NOTIFY_SOCKET,
//  WATCHDOG_USEC) once, for act_notify_tick
void act_notify_ready (const char *status);

//  Called at every pass of the loop: pings the watchdog at half its
//  interval and refreshes STATUS= about once a second. summary is called
//  only when a STATUS= line is due; it returns a string to free.
void act_notify_tick (char *(*summary) (void *), void *arg);

//  STOPPING=1 with a status line
void act_notify_stopping (const char *status);

//  Before READY=1, while the store opens long (act_store_progress_fn): a
//  status line, and EXTEND_TIMEOUT_USEC=extend_ms, so that systemd (236
//  and later) waits for READY=1 that much longer past TimeoutStartSec=
void act_notify_progress (const char *status, long long extend_ms, void *arg);

//  How often act_notify_progress wants to be called, in ms: 5000, or
//  ACTD_TEST_PROGRESS_MS from the environment (for tests; 0: as often as
//  the store looks at the clock)
long long act_notify_progress_ms (void);

#endif
