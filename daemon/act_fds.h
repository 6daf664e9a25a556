/*  =========================================================================
    act_fds - actd's open files. Every client and worker connection is a
    file descriptor, and at the limit libzmq can accept none: a connecting
    peer waits, and libzmq's I/O thread retries the accept at full speed
    (it cannot take the connection off the queue). So the soft limit is
    raised to the hard one at the start, and the loop looks once a second
    whether descriptors have run out, to say so in the log.
    ========================================================================= */

#ifndef ACT_FDS_H_INCLUDED
#define ACT_FDS_H_INCLUDED

//  Raise the soft limit on open files (RLIMIT_NOFILE) to the hard one, at
//  most ACT_FDS_MOST; logs the change. Returns the limit now in force, or
//  -1 when it cannot be read.
long long act_fds_raise (void);

//  Called at every pass of the loop: once a second, looks whether a
//  descriptor can be had. The first time none can, logs a warning (then
//  at most once a minute while it lasts), and a notice once they can again.
//  Returns true while descriptors have run out.
bool act_fds_check (long long now);

#define ACT_FDS_MOST 1048576    //  The soft limit raised to this at most
                                //  (Linux's default fs.nr_open)

#endif
