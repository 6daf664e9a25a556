/*  =========================================================================
    act_fds - actd's open files: the limit raised, and exhaustion logged.
    ========================================================================= */

#include <czmq.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include "act_fds.h"
#include "act_log.h"

#define S_CHECK_MS  1000        //  A look for exhaustion this often
#define S_REPEAT_MS 60000       //  While it lasts, a warning this often

static long long s_check_at;            //  Next look due
static long long s_warned_at;           //  Last warning, 0: none in this spell
static bool s_out;                      //  No descriptor at the last look

long long
act_fds_raise (void)
{
    struct rlimit limit;
    if (getrlimit (RLIMIT_NOFILE, &limit))
        return -1;
    rlim_t wanted = limit.rlim_max == RLIM_INFINITY || limit.rlim_max > ACT_FDS_MOST
                  ? ACT_FDS_MOST: limit.rlim_max;
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
        rlim_t was = limit.rlim_cur;
        limit.rlim_cur = wanted;
        if (setrlimit (RLIMIT_NOFILE, &limit) == 0)
            act_log (LOG_NOTICE, "open files: limit raised from %llu to %llu (the hard limit)",
                     (unsigned long long) was, (unsigned long long) wanted);
        else
            limit.rlim_cur = was;
    }
    return limit.rlim_cur == RLIM_INFINITY? LLONG_MAX: (long long) limit.rlim_cur;
}

//  True when the process can open one more descriptor. An eventfd costs
//  no file system lookup, and fails as accept does: at the process's
//  limit (EMFILE) and at the system's (ENFILE).
static bool
s_can_open (int *error)
{
    int fd = eventfd (0, EFD_CLOEXEC);
    if (fd >= 0) {
        close (fd);
        return true;
    }
    *error = errno;
    return *error != EMFILE && *error != ENFILE;
}

bool
act_fds_check (long long now)
{
    if (now < s_check_at)
        return s_out;
    s_check_at = now + S_CHECK_MS;
    int error = 0;
    if (s_can_open (&error)) {
        if (s_out)
            act_log (LOG_NOTICE, "open files: descriptors can be had again; "
                     "connections are accepted");
        s_out = false;
        s_warned_at = 0;
        return false;
    }
    s_out = true;
    if (!s_warned_at || now - s_warned_at >= S_REPEAT_MS) {
        struct rlimit limit = { 0 };
        getrlimit (RLIMIT_NOFILE, &limit);
        act_log (LOG_WARNING, "open files: none left (%s; the limit is %llu): new client and "
                 "worker connections wait, and libzmq's I/O thread spins, until some close; "
                 "raise LimitNOFILE (ulimit -n)", strerror (error),
                 (unsigned long long) limit.rlim_cur);
        s_warned_at = now;
    }
    return true;
}
