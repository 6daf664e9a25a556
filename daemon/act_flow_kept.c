/*  =========================================================================
    act_flow_kept - workers' answers kept until their effects are durable
    (part of act_flow; see act_flow.h).

    An answer's effects (the call's end, its retry) go into a batch whose
    commit may fail (a full or failing disk, PostgreSQL away), and a failed
    commit takes state again from the store: the answer was lost with it,
    and its call ran again from the start (for agent activities, model work
    paid twice). So on a store whose commits can fail, each RESULT and FAIL
    is kept (its frames copied: libzmq shares a large body rather than
    copying it) with the batch its effects went into, and dropped when that
    batch commits; while recovery runs, an answer whose call is not live
    yet (recovery has not reached it) is kept without being taken. A failed
    commit gives every kept answer back to its worker's table
    (act_flow_kept_reset), so that the call, once recovered, is found
    running there (act_flow_attach) and the answer is taken again
    (act_flow_kept_retake). Those whose call is not recovered (it was not
    kept, or runs again) are dropped when recovery is done, their slots
    freed (act_flow_kept_drop). The answers live in one array, in the order
    taken: an answer costs a copy of its frames' headers, no allocation.
    ========================================================================= */

#include "act_flow_int.h"

//  Worker keys up to this long (with their NUL) are kept in the entry
#define S_KEY_SMALL     24
//  Slots the array keeps once empty; a larger one (a stalled commit's
//  burst) is given back
#define S_ROOM_KEPT     4096

//  One answer kept
struct _act_kept_t {
    char task [ACT_TASK_ID_SIZE];   //  The task it answers
    char small [S_KEY_SMALL];   //  Its worker's key, when short
    char *large;                //  Its worker's key, when longer, or NULL
    bool fail;                  //  FAIL, else RESULT
    zmq_msg_t body;             //  Its body
    zmq_msg_t branch;           //  A RESULT's branch frame (when has_branch)
    bool has_branch;            //  The RESULT named a branch
    uint64_t batch;             //  The batch its effects went into; 0:
                                //  taken again once its call is recovered
    bool failed;                //  Its effects were in a commit that failed
    uint64_t failed_at;         //  Commits that had succeeded then
};

//  The answer's worker key
static const char *
s_key (const act_kept_t *kept)
{
    return kept->large? kept->large: kept->small;
}

//  Free what the entry holds
static void
s_close (act_kept_t *kept)
{
    free (kept->large);
    zmq_msg_close (&kept->body);
    if (kept->has_branch)
        zmq_msg_close (&kept->branch);
}

//  Drop the entries drop says so of (after closing them), keeping the
//  order of the others. Returns how many were dropped.
static size_t
s_compact (act_flow_t *self, bool (*drop) (act_flow_t *, act_kept_t *))
{
    size_t kept = 0;
    for (size_t i = 0; i < self->nkept; i++)
        if (drop (self, &self->kept [i]))
            s_close (&self->kept [i]);
        else
        if (kept++ != i)
            self->kept [kept - 1] = self->kept [i];     //  Moves the frames
    size_t dropped = self->nkept - kept;
    self->nkept = kept;
    return dropped;
}

void
act_flow_kept_on (act_flow_t *self, bool failing, bool recovering)
{
    self->failing = failing;
    self->keeping = failing || recovering || self->keep_always;
    self->recovering = recovering;
}

bool
act_flow_kept_add (act_flow_t *self, act_worker_t *worker, const char *task,
                   zmq_msg_t *body, zmq_msg_t *branch, bool fail, bool taken)
{
    //  An answer whose call is not live is kept only while recovery may
    //  still bring the call back, and only for a task its worker holds
    size_t task_size = strlen (task) + 1, key_size = strlen (worker->key) + 1;
    if (self->replaying || task_size > ACT_TASK_ID_SIZE
    ||  (!taken && (!self->recovering || !act_worker_holds (worker, task))))
        return false;
    if (self->nkept == self->kept_room) {
        size_t room = self->kept_room? self->kept_room * 2: 256;
        act_kept_t *grown = (act_kept_t *) realloc (self->kept, room * sizeof *grown);
        if (!grown)
            return false;       //  Out of memory: taken as before, not kept
        self->kept = grown;
        self->kept_room = room;
    }
    act_kept_t *kept = &self->kept [self->nkept];
    kept->large = NULL;
    if (key_size <= S_KEY_SMALL)
        memcpy (kept->small, worker->key, key_size);
    else
    if (!(kept->large = strdup (worker->key)))
        return false;
    memcpy (kept->task, task, task_size);
    kept->fail = fail;
    zmq_msg_init (&kept->body);
    if (body)
        zmq_msg_copy (&kept->body, body);
    kept->has_branch = branch != NULL;
    if (branch) {
        zmq_msg_init (&kept->branch);
        zmq_msg_copy (&kept->branch, branch);
    }
    kept->batch = taken? self->batch: 0;
    kept->failed = false;
    self->untaken += !taken;
    self->nkept++;
    return true;
}

void
act_flow_kept_sealed (act_flow_t *self)
{
    self->sealed = self->batch++;
}

//  s_compact's test: the answer's batch is durable
static bool
s_durable (act_flow_t *self, act_kept_t *kept)
{
    return kept->batch && kept->batch <= self->sealed;
}

void
act_flow_kept_committed (act_flow_t *self)
{
    self->commits++;
    s_compact (self, s_durable);
    if (!self->nkept && self->kept_room > S_ROOM_KEPT) {
        free (self->kept);
        self->kept = NULL;
        self->kept_room = 0;
    }
}

//  s_compact's test, after a failed commit: an answer whose effects failed
//  a commit again though one succeeded since its last failure is one the
//  store cannot hold (a result too large for the disk's room): it is
//  dropped, and its call runs again. The others are failed, not dropped.
static bool
s_poison (act_flow_t *self, act_kept_t *kept)
{
    if (!kept->batch)
        return false;           //  Not taken since the last failure
    if (kept->failed && self->commits > kept->failed_at) {
        act_log (LOG_WARNING, "the answer to task %s failed a commit again after others "
                 "succeeded: dropped, its call runs again", kept->task);
        return true;
    }
    kept->failed = true;
    kept->failed_at = self->commits;
    return false;
}

void
act_flow_kept_reset (act_flow_t *self)
{
    s_compact (self, s_poison);
    for (size_t i = 0; i < self->nkept; i++) {
        act_kept_t *kept = &self->kept [i];
        uint64_t number, attempt;
        act_worker_t *worker = act_pool_worker (self->pool, s_key (kept));
        if (kept->batch && worker && act_task_parse (kept->task, &number, &attempt))
            act_worker_hold (worker, kept->task, number, attempt);
        kept->batch = 0;
    }
    self->untaken = self->nkept;
}

//  Whether kept may be taken (again) now: one whose effects failed a
//  commit waits for a commit to succeed, so that it does not fail the
//  writes of others with it while the store cannot hold it
static bool
s_may_take (act_flow_t *self, act_kept_t *kept)
{
    return kept->batch == 0 && (!kept->failed || !self->failing);
}

//  The live call kept answers, attached to its worker, or NULL
static act_live_t *
s_kept_call (act_flow_t *self, act_kept_t *kept)
{
    uint64_t number, attempt;
    if (!act_task_parse (kept->task, &number, &attempt))
        return NULL;
    act_live_t *call = act_flow_lookup (self, number);
    return call && call->state == ACT_LIVE_RUNNING && call->worker
        && streq (call->task, kept->task) && streq (s_key (kept), call->worker->key)
         ? call: NULL;
}

//  Take kept again for call
static void
s_take (act_flow_t *self, act_kept_t *kept, act_live_t *call)
{
    //  Its copy kept with the batch it goes into now (nothing is added
    //  while replaying: the array stays put)
    kept->batch = self->batch;
    self->untaken--;
    act_log (LOG_DEBUG, "call %s: the answer to task %s, kept through a failed "
             "commit, is taken again", call->id, kept->task);
    self->replaying = true;
    if (kept->fail)
        act_flow_fail (self, call->worker, kept->task, &kept->body);
    else
        act_flow_result (self, call->worker, kept->task, &kept->body,
                         kept->has_branch? &kept->branch: NULL);
    self->replaying = false;
}

void
act_flow_kept_retake (act_flow_t *self)
{
    for (size_t i = 0; i < self->nkept && self->untaken; i++) {
        act_kept_t *kept = &self->kept [i];
        act_live_t *call = s_may_take (self, kept)? s_kept_call (self, kept): NULL;
        if (call)
            s_take (self, kept, call);
    }
}

bool
act_flow_kept_probe (act_flow_t *self)
{
    for (size_t i = 0; i < self->nkept && self->untaken; i++) {
        act_kept_t *kept = &self->kept [i];
        act_live_t *call = kept->batch == 0 && kept->failed? s_kept_call (self, kept): NULL;
        if (call) {
            act_live_save (call, self->store);
            return true;
        }
    }
    return false;
}

//  s_compact's test: the answer was not taken again, and no call waits
//  for it (one attached waits for a commit to succeed); its slot is freed
static bool
s_untaken (act_flow_t *self, act_kept_t *kept)
{
    if (kept->batch || s_kept_call (self, kept))
        return false;
    act_worker_t *worker = act_pool_worker (self->pool, s_key (kept));
    if (worker)
        act_worker_release (worker, kept->task);
    return true;
}

size_t
act_flow_kept_drop (act_flow_t *self)
{
    size_t dropped = s_compact (self, s_untaken);
    self->untaken = 0;
    for (size_t i = 0; i < self->nkept; i++)
        self->untaken += self->kept [i].batch == 0;
    return dropped;
}

void
act_flow_kept_destroy (act_flow_t *self)
{
    for (size_t i = 0; i < self->nkept; i++)
        s_close (&self->kept [i]);
    free (self->kept);
    self->kept = NULL;
    self->nkept = self->kept_room = self->untaken = 0;
}
