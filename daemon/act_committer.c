/*  =========================================================================
    act_committer - the store's commits on their own thread (see
    act_committer.h). A thread and two eventfds: the loop writes "go", the
    thread commits and writes "done". Not a CZMQ actor: a commit handed
    over and its end told back cost the loop two syscalls and one wake-up
    each way (an actor's pipe costs a dozen, with ZMQ_EVENTS checks), and
    a one-at-a-time call makes two commits.
    ========================================================================= */

#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include "act_committer.h"

struct _act_committer_t {
    pthread_t thread;           //  The thread that commits
    int go;                     //  eventfd: a commit is handed over (or stop)
    int done;                   //  eventfd: the commit handed over has ended
    act_store_t *store;         //  What it commits (borrowed)
    act_err_t err;              //  The last commit's error, written by the
                                //  thread before rc
    atomic_int rc;              //  The last commit's result (0 or -1)
    atomic_bool stop;           //  The thread is to end at its next "go"
    bool busy;                  //  A commit is in flight (the loop's)
};

//  Add one to eventfd fd (never fails but for EINTR)
static void
s_post (int fd)
{
    uint64_t one = 1;
    while (write (fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

//  Wait until eventfd fd is non-zero and reset it
static void
s_take (int fd)
{
    uint64_t count;
    while (read (fd, &count, sizeof count) < 0 && errno == EINTR)
        ;
}

//  The thread: one commit per "go", its end told on "done"
static void *
s_thread (void *arg)
{
    act_committer_t *self = (act_committer_t *) arg;
    while (true) {
        s_take (self->go);
        if (atomic_load (&self->stop))
            break;
        memset (&self->err, 0, sizeof self->err);
        int rc = act_store_commit_sealed (self->store, &self->err);
        atomic_store (&self->rc, rc == 0? 0: -1);
        s_post (self->done);
    }
    return NULL;
}

act_committer_t *
act_committer_new (act_store_t *store)
{
    act_committer_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->go = eventfd (0, EFD_CLOEXEC);
    self->done = eventfd (0, EFD_CLOEXEC);
    //  SIGTERM and SIGHUP are the loop's: the thread is made with them
    //  blocked (it inherits the mask), so they never interrupt a commit
    sigset_t mask, old;
    sigemptyset (&mask);
    sigaddset (&mask, SIGTERM);
    sigaddset (&mask, SIGINT);
    sigaddset (&mask, SIGHUP);
    pthread_sigmask (SIG_BLOCK, &mask, &old);
    int rc = self->go >= 0 && self->done >= 0
           ? pthread_create (&self->thread, NULL, s_thread, self): -1;
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        if (self->go >= 0)
            close (self->go);
        if (self->done >= 0)
            close (self->done);
        free (self);
        return NULL;
    }
    return self;
}

void
act_committer_destroy (act_committer_t **self_p)
{
    if (self_p && *self_p) {
        act_committer_t *self = *self_p;
        if (self->busy)
            s_take (self->done);
        atomic_store (&self->stop, true);
        s_post (self->go);
        pthread_join (self->thread, NULL);
        close (self->go);
        close (self->done);
        free (self);
        *self_p = NULL;
    }
}

void
act_committer_start (act_committer_t *self)
{
    self->busy = true;
    s_post (self->go);
}

int
act_committer_fd (act_committer_t *self)
{
    return self->done;
}

int
act_committer_finish (act_committer_t *self, act_err_t *err)
{
    s_take (self->done);
    self->busy = false;
    int rc = atomic_load (&self->rc);
    if (rc != 0 && err)
        *err = self->err;
    return rc;
}

bool
act_committer_busy (act_committer_t *self)
{
    return self->busy;
}
