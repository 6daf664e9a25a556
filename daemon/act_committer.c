/*  =========================================================================
    act_committer - the store's commits on their own thread (see
    act_committer.h). A CZMQ actor: the loop sends COMMIT on the actor's
    pipe, the actor commits and signals the outcome back.
    ========================================================================= */

#include <signal.h>
#include <pthread.h>
#include "act_committer.h"
#include "act_broker.h"

struct _act_committer_t {
    zactor_t *actor;            //  The thread and its pipe
    act_store_t *store;         //  What it commits (borrowed)
    act_err_t err;              //  The last commit's error, written by the
                                //  thread, read after its signal
    bool busy;                  //  A commit is in flight
};

//  The thread: one commit per COMMIT, its outcome signalled (0 or 1)
static void
s_actor (zsock_t *pipe, void *arg)
{
    act_committer_t *self = (act_committer_t *) arg;
    //  SIGTERM and SIGHUP are the loop's: delivered here, they would only
    //  interrupt the wait for COMMIT (which then ended the thread, and the
    //  loop waited for its commit forever). actd blocks them before any
    //  thread starts; this is for a program that does not
    sigset_t mask;
    act_broker_signals (&mask);
    pthread_sigmask (SIG_BLOCK, &mask, NULL);
    //  Named apart from the loop, for top -H, perf and /proc
    pthread_setname_np (pthread_self (), "actd/commit");
    zsock_signal (pipe, 0);
    while (true) {
        char *command = zstr_recv (pipe);
        if (!command && zmq_errno () == EINTR)
            continue;
        if (!command || streq (command, "$TERM")) {
            zstr_free (&command);
            break;
        }
        memset (&self->err, 0, sizeof self->err);
        int rc = act_store_commit_sealed (self->store, &self->err);
        zstr_free (&command);
        zsock_signal (pipe, rc == 0? 0: 1);
    }
}

act_committer_t *
act_committer_new (act_store_t *store)
{
    act_committer_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->actor = zactor_new (s_actor, self);
    if (!self->actor) {
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
            zsock_wait (self->actor);
        zactor_destroy (&self->actor);
        free (self);
        *self_p = NULL;
    }
}

void
act_committer_start (act_committer_t *self)
{
    self->busy = true;
    while (zstr_send (self->actor, "COMMIT") == -1 && zmq_errno () == EINTR)
        ;
}

zsock_t *
act_committer_sock (act_committer_t *self)
{
    return zactor_sock (self->actor);
}

int
act_committer_finish (act_committer_t *self, act_err_t *err)
{
    //  A signal may interrupt the wait; the commit's own signal still comes
    int status;
    while ((status = zsock_wait (self->actor)) == -1 && zmq_errno () == EINTR)
        ;
    self->busy = false;
    if (status != 0 && err)
        *err = self->err;
    return status == 0? 0: -1;
}

bool
act_committer_busy (act_committer_t *self)
{
    return self->busy;
}
