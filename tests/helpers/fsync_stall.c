/*  =========================================================================
    fsync_stall - an LD_PRELOAD library that makes one process's store
    slow on demand, for the tests of what waits for a commit (replies, and
    requests read ahead meanwhile) while peers come and go.

    While the file that ACTD_FSYNC_STALL names exists, each fsync and
    fdatasync waits (the file looked at every 5 ms) before doing the real
    call; SQLite's commit (synchronous=FULL) syncs its WAL so, on actd's
    committer thread. When a call begins to wait it creates the file
    ACTD_FSYNC_STALL.stalled, for the test to know a commit is held.

    Built without sanitizers: it is loaded before their runtimes (the
    tests set ASAN_OPTIONS verify_asan_link_order=0).
    ========================================================================= */

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (s_sync_fn) (int);

//  Wait while the stall file exists; say so once, in its .stalled file
static void
s_stall (void)
{
    const char *path = getenv ("ACTD_FSYNC_STALL");
    if (!path || access (path, F_OK) != 0)
        return;
    char said [4096];
    if (snprintf (said, sizeof said, "%s.stalled", path) < (int) sizeof said) {
        int fd = open (said, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            close (fd);
    }
    struct timespec pause = { 0, 5 * 1000 * 1000 };
    while (access (path, F_OK) == 0)
        nanosleep (&pause, NULL);
}

int
fsync (int fd)
{
    static s_sync_fn *real;
    if (!real)
        real = (s_sync_fn *) dlsym (RTLD_NEXT, "fsync");
    s_stall ();
    return real (fd);
}

int
fdatasync (int fd)
{
    static s_sync_fn *real;
    if (!real)
        real = (s_sync_fn *) dlsym (RTLD_NEXT, "fdatasync");
    s_stall ();
    return real (fd);
}
