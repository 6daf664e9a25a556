/*  =========================================================================
    act_flow_kept - workers' answers kept through failed commits (part of
    act_flow; see act_flow.h).

    While commits fail (a full or failing disk, PostgreSQL away), an
    answer's effects (the call's end, its retry) go into a batch that may
    fail too, and a failed commit takes state again from the store: the
    answer was lost with it, and its call ran again from the start. So
    from the first failed commit until one succeeds and recovery is done,
    each RESULT and FAIL is kept (its frames copied: libzmq shares a large
    body rather than copying it) with the batch its effects went into, and
    an answer whose call is not live yet (recovery has not reached it) is
    kept without being taken. A commit that succeeds drops the answers of
    its batch. A failed one gives every kept answer back to its worker's
    table (act_flow_kept_reset), so that the call, once recovered, is
    found running there (act_flow_attach) and the answer is taken again
    (act_flow_kept_replay). Those whose call is not recovered (it was not
    kept, or runs again) are dropped when recovery is done, their slots
    freed (act_flow_kept_drop). Nothing is kept while commits succeed: the
    hot path pays one test.
    ========================================================================= */

#include "act_flow_int.h"

//  One answer kept
typedef struct {
    char task [ACT_TASK_ID_SIZE];   //  The task it answers
    char *worker;               //  Its worker's key
    bool fail;                  //  FAIL, else RESULT
    zmq_msg_t body;             //  Its body
    zmq_msg_t branch;           //  A RESULT's branch frame (when has_branch)
    bool has_branch;            //  The RESULT named a branch
    uint64_t batch;             //  The batch its effects went into; 0:
                                //  taken again once its call is recovered
} s_kept_t;

static void
s_kept_destroy (void **item)
{
    s_kept_t *kept = (s_kept_t *) *item;
    if (!kept)
        return;
    free (kept->worker);
    zmq_msg_close (&kept->body);
    if (kept->has_branch)
        zmq_msg_close (&kept->branch);
    free (kept);
    *item = NULL;
}

void
act_flow_kept_on (act_flow_t *self, bool failing, bool recovering)
{
    self->failing = failing;
    self->keeping = failing || recovering;
    self->recovering = recovering;
}

bool
act_flow_kept_add (act_flow_t *self, act_worker_t *worker, const char *task,
                   zmq_msg_t *body, zmq_msg_t *branch, bool fail, bool taken)
{
    //  An answer whose call is not live is kept only while recovery may
    //  still bring the call back, and only for a task its worker holds
    if (self->replaying || strlen (task) >= ACT_TASK_ID_SIZE
    ||  (!taken && (!self->recovering || !act_worker_holds (worker, task))))
        return false;
    s_kept_t *kept = (s_kept_t *) calloc (1, sizeof *kept);
    if (kept)
        kept->worker = strdup (worker->key);
    if (!kept || !kept->worker) {
        free (kept);
        return false;           //  Out of memory: taken as before, not kept
    }
    strcpy (kept->task, task);
    kept->fail = fail;
    zmq_msg_init (&kept->body);
    zmq_msg_copy (&kept->body, body);
    kept->has_branch = branch != NULL;
    if (branch) {
        zmq_msg_init (&kept->branch);
        zmq_msg_copy (&kept->branch, branch);
    }
    kept->batch = taken? self->batch: 0;
    if (!self->kept) {
        self->kept = zlistx_new ();
        zlistx_set_destructor (self->kept, s_kept_destroy);
    }
    zlistx_add_end (self->kept, kept);
    return true;
}

void
act_flow_kept_sealed (act_flow_t *self)
{
    self->sealed = self->batch++;
}

void
act_flow_kept_committed (act_flow_t *self)
{
    //  zlistx_delete moves the cursor back: the walk goes on
    for (s_kept_t *kept = self->kept? (s_kept_t *) zlistx_first (self->kept): NULL; kept;
         kept = (s_kept_t *) zlistx_next (self->kept))
        if (kept->batch && kept->batch <= self->sealed)
            zlistx_delete (self->kept, zlistx_cursor (self->kept));
}

void
act_flow_kept_reset (act_flow_t *self)
{
    for (s_kept_t *kept = self->kept? (s_kept_t *) zlistx_first (self->kept): NULL; kept;
         kept = (s_kept_t *) zlistx_next (self->kept)) {
        uint64_t number, attempt;
        act_worker_t *worker = act_pool_worker (self->pool, kept->worker);
        if (kept->batch && worker && act_task_parse (kept->task, &number, &attempt))
            act_worker_hold (worker, kept->task, number, attempt);
        kept->batch = 0;
    }
}

void
act_flow_kept_replay (act_flow_t *self, act_live_t *call)
{
    for (s_kept_t *kept = (s_kept_t *) zlistx_first (self->kept); kept;
         kept = (s_kept_t *) zlistx_next (self->kept))
        if (kept->batch == 0 && streq (kept->task, call->task)
        &&  streq (kept->worker, call->worker->key)) {
            //  Taken again, its copy kept with the batch it goes into now
            kept->batch = self->batch;
            act_log (LOG_DEBUG, "call %s: the answer to task %s, kept through a failed "
                     "commit, is taken again", call->id, kept->task);
            self->replaying = true;
            if (kept->fail)
                act_flow_fail (self, call->worker, kept->task, &kept->body);
            else
                act_flow_result (self, call->worker, kept->task, &kept->body,
                                 kept->has_branch? &kept->branch: NULL);
            self->replaying = false;
            return;
        }
}

size_t
act_flow_kept_drop (act_flow_t *self)
{
    size_t dropped = 0;
    for (s_kept_t *kept = self->kept? (s_kept_t *) zlistx_first (self->kept): NULL; kept;
         kept = (s_kept_t *) zlistx_next (self->kept))
        if (kept->batch == 0) {
            act_worker_t *worker = act_pool_worker (self->pool, kept->worker);
            if (worker)
                act_worker_release (worker, kept->task);
            zlistx_delete (self->kept, zlistx_cursor (self->kept));
            dropped++;
        }
    return dropped;
}

void
act_flow_kept_destroy (act_flow_t *self)
{
    zlistx_destroy (&self->kept);
}
