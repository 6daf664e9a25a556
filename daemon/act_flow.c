/*  =========================================================================
    act_flow - a call's path through the broker (see act_flow.h).

    Reading order, which is the order of a call's life: its first step,
    submit (validate, number, evaluate) and acceptance (stored, indexed,
    started) are in act_submit.c; here, queue and dispatch; the worker's
    answer (act_flow_answers.c); failures and retries; the output and the
    end; timers. Recovery of a loaded context's calls is in
    act_recover.c; STATUS of the live calls and the end of a context in
    act_flow_calls.c.
    ========================================================================= */

#include "act_flow_int.h"
#include "act_outcome.h"

static void s_call_queue (act_flow_t *self, act_live_t *call, bool front);
static void s_dispatch_activity (act_flow_t *self, act_activity_t *activity);

json_t *
act_flow_error_json (const char *code, const char *message)
{
    return json_pack ("{ssss}", "code", code, "message", message);
}


//  --------------------------------------------------------------------------
//  The call and its states

act_live_t *
act_flow_lookup (act_flow_t *self, uint64_t number)
{
    //  By hand: snprintf costs more than the lookup
    char id [ACT_DECIMAL_MAX + 1];
    id [act_decimal_write (id, (long long) number)] = 0;
    return (act_live_t *) zhashx_lookup (self->calls, id);
}

//  A timer for the call, delay ms after from. A call's own _timeout and
//  _retry are any positive integers: a sum past the clock's range is the
//  end of time, not an overflow
static void
s_timer_set (act_flow_t *self, act_live_t *call, act_flow_timer_type_t type, long long from,
             long long delay)
{
    long long at = delay > LLONG_MAX - from? LLONG_MAX: from + delay;
    act_timer_t timer = { at, call->number, call->timer, (int) type };
    if (act_timers_add (self->timers, timer))
        act_log (LOG_ERR, "out of memory for a timer of call %s", call->id);
}

static void
s_call_destructor (void **item)
{
    act_live_destroy ((act_live_t **) item);
}

//  Drop a call that was never accepted: release its reservation, free it
void
act_flow_drop (act_flow_t *self, act_live_t **call_p)
{
    if (*call_p && (*call_p)->state != ACT_LIVE_NONE)
        act_live_enter (*call_p, ACT_LIVE_NONE, self->counts);
    act_live_destroy (call_p);
}

//  Register the call under its _id in its context, or forget it there
void
act_flow_key (act_flow_t *self, act_live_t *call, bool add)
{
    if (!call->call->id)
        return;
    char *key = act_key_new (call->context->id, call->call->id);
    if (add)
        zhashx_insert (self->keys, key, call);
    else
        zhashx_delete (self->keys, key);
    free (key);
}


//  --------------------------------------------------------------------------
//  Dependencies: calls whose producers ended are evaluated again

//  Calls whose producers all ended are evaluated again by act_flow_settle:
//  a worklist, not recursion, so a chain of 10 000 skipped calls costs no
//  stack
void
act_flow_todo (act_flow_t *self, uint64_t number)
{
    if (self->ntodo == self->todo_size) {
        self->todo_size = self->todo_size? self->todo_size * 2: 64;
        self->todo = realloc (self->todo, self->todo_size * sizeof (uint64_t));
    }
    self->todo [self->ntodo++] = number;
}


//  True when a watch follows the calls of call's context (most of the
//  time none is open at all: no lookup then)
static bool
s_call_watched (act_flow_t *self, act_live_t *call)
{
    return act_watches_size (self->watches)
        && act_watches_calls (self->watches, call->context->id);
}

void
act_flow_enter (act_flow_t *self, act_live_t *call, act_live_state_t state)
{
    //  Each change is told once (a retry's delay ends queued as it began)
    bool changed = call->state != state;
    act_live_enter (call, state, self->counts);
    if (changed && s_call_watched (self, call)) {
        json_t *status = act_live_status (call);
        char *text = act_json_dump (status);
        act_watches_call (self->watches, call->context->id, text);
        free (text);
        json_decref (status);
    }
}

//  An ended call's STATUS (as a record gives it) to the watches that
//  follow its context's calls
static void
s_call_told (act_flow_t *self, act_live_t *call, const char *status, const char *outcome)
{
    if (!s_call_watched (self, call))
        return;
    json_t *head = json_pack ("{sssssssI}", "call_id", call->id, "context", call->context->id,
                              "state", status, "attempts", (json_int_t) call->attempts);
    //  As act_live_status: the activity and the output path (additive)
    json_object_set_new (head, "tool", json_string (call->call->tool));
    if (call->call->output)
        json_object_set_new (head, "output_path", json_string (call->call->output->text));
    json_t *references = act_call_references (call->call);
    if (references)
        json_object_set_new (head, "references", references);
    if (call->progress)
        json_object_set (head, "progress", call->progress);
    char *text = act_json_dump (head);
    char *joined = act_text_splice (text, "outcome", outcome);
    act_watches_call (self->watches, call->context->id, joined);
    free (joined);
    free (text);
    json_decref (head);
}


//  --------------------------------------------------------------------------
//  Queue and dispatch

void
act_flow_enqueue (act_flow_t *self, act_live_t *call, bool front)
{
    act_flow_enter (self, call, ACT_LIVE_QUEUED);
    zlistx_t *queue = call->activity->queue;
    call->queue_handle = front? zlistx_add_start (queue, call): zlistx_add_end (queue, call);
    //  From the stamp the queue's entry took: a clock read costs ~23 ns in
    //  this VM, and a call read it 13 times
    s_timer_set (self, call, T_SCHEDULE, call->queued_at,
                 call->activity->settings->schedule_timeout_ms);
}

//  Queue the call for a worker (at the front for a retry), then dispatch
static void
s_call_queue (act_flow_t *self, act_live_t *call, bool front)
{
    act_flow_enqueue (self, call, front);
    s_dispatch_activity (self, call->activity);
}

//  Queue a call and store it as queued unless the dispatch this starts
//  took it (the dispatch stores it). That dispatch may also end the call
//  (a reference erased meanwhile), which frees it: it is looked up again
static void
s_call_queue_saved (act_flow_t *self, act_live_t *call, bool front)
{
    uint64_t number = call->number;
    s_call_queue (self, call, front);
    call = act_flow_lookup (self, number);
    if (call && call->state == ACT_LIVE_QUEUED)
        act_live_save (call, self->store);
}

void
act_flow_backoff (act_flow_t *self, act_live_t *call, long long delay)
{
    act_flow_enter (self, call, ACT_LIVE_QUEUED);
    call->backoff = true;
    s_timer_set (self, call, T_RETRY, act_clock_ms (), delay);
}

//  The call's parameters went absent since it became ready (a value was
//  erased): wait again if a pending call can write it, else skip
static void
s_call_unready (act_flow_t *self, act_live_t *call, act_err_t *err)
{
    //  Evaluated while queued: a call skipped now never waited
    act_live_eval_t eval = act_live_evaluate (call, err);
    if (eval == ACT_LIVE_WAIT) {
        act_flow_enter (self, call, ACT_LIVE_WAITING);
        return;
    }
    if (eval == ACT_LIVE_READY)
        act_err_set (err, ACT_E_UNRESOLVED_REFERENCE, "%s", "a reference became absent");
    act_flow_finish (self, call, "skipped", act_flow_error_json (err->code, err->message), NULL, 0, 0);
}

//  The most bytes a TASK's parameters may take, references resolved: a
//  call of a few KB repeating a reference to a large value made TASKs of
//  hundreds of MB, built on the loop (an audit: 737 MB from 10 KB).
//  max_worker_bytes, what libzmq may hold for a worker, bounds them (0:
//  no bound there, then max_message_bytes times 64)
static size_t
s_params_max (act_flow_t *self)
{
    long long held = self->settings->max_worker_bytes;
    return (size_t) (held > 0? held: self->settings->max_message_bytes * 64);
}

//  True when the call's TASK may leave before the commit that stores its
//  acceptance and this attempt, so that the worker runs while the store
//  commits (the commit then costs a call no time of its own). Only the
//  first attempt of a call accepted in this run, whose parameters read
//  nothing of its context that is not durable yet (no reference, or
//  every message of the context committed): a TASK then reveals nothing
//  but the call the client sent, which the client was not yet told is
//  stored, and stored values. A crash before that commit loses the call
//  unacknowledged (the client was never ACCEPTED), or finds it stored
//  but not yet sent, and it runs again; either way at least once, as
//  PROTOCOL.md asks. A recovered call or a retry waits for the commit
//  that counts its attempt, so a call whose run crashes actd ends
//  worker_lost after its attempts, not in a loop of restarts. With
//  store/early_tasks = 0 every TASK waits: a worker sees stored calls only.
static bool
s_task_early (act_flow_t *self, act_live_t *call)
{
    return self->settings->early_tasks && !call->recovered && call->attempts == 1
        && (call->call->nrefs == 0 || act_store_durable (self->store, call->context->written));
}

//  Send the call's next attempt to worker
static void
s_call_dispatch (act_flow_t *self, act_live_t *call, act_worker_t *worker)
{
    act_err_t err = { 0 };
    //  The parameters as text, from the call's text; a tree only when the
    //  activity's tool checks them (PROTOCOL.md section 2.1): resolved,
    //  they are checked against it, and a mismatch ends the call, not
    //  retried
    char *params_text = NULL;
    if (act_tools_checks (self->tools, call->activity->name, call->tool_checked)) {
        json_t *params = act_call_params (call->call, call->context->ctx, &err);
        if (params && act_tools_check_params (self->tools, call->activity->name, params,
                                              call->tool_checked, &err)) {
            json_decref (params);
            act_flow_finish (self, call, "error", act_flow_error_json (err.code, err.message),
                           NULL, 0, 0);
            return;
        }
        params_text = params? act_json_dump_within (params, s_params_max (self)): NULL;
        if (params && !params_text)
            act_err_set (&err, ACT_E_TOO_LARGE, "the parameters with their references "
                         "resolved would be over %zu bytes", s_params_max (self));
        json_decref (params);
    }
    else
        params_text = act_call_params_text_within (call->call, call->context->ctx,
                                                   s_params_max (self), &err);
    if (!params_text && err.code && streq (err.code, ACT_E_TOO_LARGE)) {
        act_flow_finish (self, call, "error", act_flow_error_json (err.code, err.message), NULL, 0, 0);
        return;
    }
    if (!params_text) {
        s_call_unready (self, call, &err);
        return;
    }
    //  Counted before the change is told: a watch sees the running
    //  attempt's number, as STATUS does
    call->attempts++;
    act_flow_enter (self, call, ACT_LIVE_RUNNING);
    call->worker = worker;
    act_live_task_id (call);
    act_worker_hold (worker, call->task, call->number, (uint64_t) call->attempts);
    long long now = call->started_at / 1000;    //  The attempt's stamp, in ms
    worker->used = now;
    char local [512];
    char *meta = act_live_meta (call, local, sizeof local);
    act_out_t *task = act_worker_task (self->outbox, worker, call->task, call->activity->name,
                                       params_text, meta);
    if (s_task_early (self, call))
        act_out_early (task);
    if (meta != local)
        free (meta);
    free (params_text);
    s_timer_set (self, call, T_DEADLINE, now, call->timeout_ms);
    act_live_save (call, self->store);
    act_log (LOG_DEBUG, "call %s (%s) attempt %lld sent to worker %s",
             call->id, call->activity->name, call->attempts, worker->name);
}

bool
act_flow_attach (act_flow_t *self, act_live_t *call)
{
    act_live_task_id (call);
    act_worker_t *worker = act_pool_holder (self->pool, call->task);
    if (!worker)
        return false;
    //  Not told to the watches: for them it has been running all along
    act_live_enter (call, ACT_LIVE_RUNNING, self->counts);
    call->worker = worker;
    //  Its deadline is its attempt's, as the flow knew it before the
    //  failed commit (act_flow_reset); unknown (a store shared by other
    //  brokers may hand over a call), it counts from now
    long long *began = self->began? (long long *) zhashx_lookup (self->began, call->task): NULL;
    if (began) {
        call->started_at = *began;
        zhashx_delete (self->began, call->task);
    }
    s_timer_set (self, call, T_DEADLINE, call->started_at / 1000, call->timeout_ms);
    act_log (LOG_DEBUG, "call %s (%s) attempt %lld still running at worker %s",
             call->id, call->activity->name, call->attempts, worker->name);
    return true;                //  Its answer, if kept, is taken by act_flow_kept_retake
}

static void
s_dispatch_activity (act_flow_t *self, act_activity_t *activity)
{
    while (!self->stopping && zlistx_size (activity->queue)) {
        act_worker_t *worker = act_worker_pick (activity);
        if (!worker)
            break;
        s_call_dispatch (self, (act_live_t *) zlistx_first (activity->queue), worker);
    }
}

//  Dispatch the queue of call's activity as far as call: the calls queued
//  before it go first, as they would had it been queued last; the ones
//  behind it (a PLAN's later calls) wait for their own turn, so that a
//  PLAN's calls are dispatched in its order whatever their activities
void
act_flow_dispatch (act_flow_t *self, act_live_t *call)
{
    act_activity_t *activity = call->activity;
    bool reached = false;
    while (!reached && !self->stopping && zlistx_size (activity->queue)) {
        act_worker_t *worker = act_worker_pick (activity);
        if (!worker)
            break;
        act_live_t *first = (act_live_t *) zlistx_first (activity->queue);
        reached = first == call;        //  Before: its dispatch may end it
        s_call_dispatch (self, first, worker);
    }
}

//  Activities act_flow_worker_ready looked at (act_flow_ready_steps)
static size_t s_ready_steps;

void
act_flow_worker_ready (act_flow_t *self, act_worker_t *worker)
{
    //  Serve its activities in turn, one call at a time, so a flooded
    //  activity cannot starve the others. Each round walks the list once,
    //  from the cursor round to it again: it walked from the first
    //  activity to each in turn, count^2/2 steps a round, which a worker
    //  of 1,024 activities paid at each of its results
    size_t count = zlistx_size (worker->activities);
    bool progress = true;
    while (progress && count && !self->stopping && act_worker_free (worker)) {
        progress = false;
        size_t index = worker->cursor % count;
        act_activity_t *activity = zlistx_first (worker->activities);
        for (size_t i = 0; i < index; i++)
            activity = zlistx_next (worker->activities);
        s_ready_steps += index;
        for (size_t k = 0; k < count && activity && !progress; k++) {
            s_ready_steps++;
            act_worker_t *chosen = zlistx_size (activity->queue)? act_worker_pick (activity): NULL;
            if (chosen) {
                //  The dispatch may change the lists: the round ends here
                s_call_dispatch (self, (act_live_t *) zlistx_first (activity->queue), chosen);
                worker->cursor = index + 1;
                progress = true;
            }
            else
            if (++index == count) {
                index = 0;
                activity = zlistx_first (worker->activities);
            }
            else
                activity = zlistx_next (worker->activities);
        }
    }
}

size_t
act_flow_ready_steps (void)
{
    return s_ready_steps;
}


//  --------------------------------------------------------------------------
//  Failures and retries

//  The delay before the retry after attempt number call->attempts
static long long
s_retry_delay (act_live_t *call)
{
    double delay = (double) call->retry.initial_ms;
    for (long long i = 1; i < call->attempts && delay < call->retry.max_ms; i++)
        delay *= call->retry.backoff;
    return delay < call->retry.max_ms? (long long) delay: call->retry.max_ms;
}

//  One attempt failed: retry when the policy allows (after the backoff
//  delay when delay is set), else end the call. Takes ownership of error.
void
act_flow_failed (act_flow_t *self, act_live_t *call, json_t *error, bool retryable,
                 bool delay)
{
    const char *code = json_string_value (json_object_get (error, "code"));
    char shown [ACT_LOG_CUT + 4];
    const char *message = act_log_cut (json_string_value (json_object_get (error, "message")),
                                    shown);
    //  While stopping, a retry is queued like any other but not
    //  dispatched: the call is recovered and runs at the next start
    if (retryable && call->attempts < call->retry.max_attempts) {
        long long wait = delay? s_retry_delay (call): 0;
        act_log (LOG_INFO, "call %s (%s) attempt %lld failed (%s: %s); retry in %lld ms",
                 call->id, call->activity->name, call->attempts, code, message, wait);
        json_decref (error);
        if (wait > 0) {
            //  When the delay ends is stored, on the wall clock (a restart
            //  waits for what is left of it: docs/protocol.md 3.5)
            act_flow_backoff (self, call, wait);
            act_live_retry_wait (call, wait);
            act_live_save (call, self->store);
            act_live_put_resume (call, self->store);
        }
        else
            s_call_queue_saved (self, call, true);
        return;
    }
    //  Failed for good, at warning (docs/operations.md, "Logs"), whether
    //  its attempts ran out or the failure may not be retried
    if (retryable)
        act_log (LOG_WARNING, "call %s (%s) failed after %lld attempts: %s: %s",
                 call->id, call->activity->name, call->attempts, code, message);
    else
        act_log (LOG_WARNING, "call %s (%s) failed at attempt %lld, not to be retried: %s: %s",
                 call->id, call->activity->name, call->attempts, code, message);
    bool timed_out = code && (streq (code, ACT_E_TIMEOUT) || streq (code, ACT_E_NO_WORKER));
    act_flow_finish (self, call, timed_out? "timeout": "error", error, NULL, 0, 0);
}


//  --------------------------------------------------------------------------
//  The output and the end

//  Wake the calls that waited for call in their current round
static void
s_call_wake (act_flow_t *self, act_live_t *call)
{
    for (act_live_waiter_t *waiter = call->waiters? zlistx_first (call->waiters): NULL; waiter;
         waiter = zlistx_next (call->waiters)) {
        act_live_t *other = act_flow_lookup (self, waiter->number);
        if (other && other->state == ACT_LIVE_WAITING && other->round == waiter->round
        &&  --other->waiting_on == 0)
            act_flow_todo (self, other->number);
    }
}

//  Room of the outcome text kept from one call to the next
#define S_OUTCOME_ROOM 65536

//  End the call with status (for ok: the worker's text of its result,
//  result_size bytes, valid JSON, not NUL-terminated):
//  write its output, store the outcome, send DONE, wake the calls that
//  waited for it, and forget it. Takes ownership of error.
void
act_flow_finish (act_flow_t *self, act_live_t *call, const char *status, json_t *error,
                 const char *result_text, size_t result_size, long long branch)
{
    act_live_enter (call, ACT_LIVE_ENDED, self->counts);
    act_ending_t ending = { status, error, NULL, result_text, result_size, branch };
    const char *outcome = act_outcome_write (call, self->store, self->watches, &ending,
                                             &self->outcome);
    status = ending.status;
    error = ending.error;
    char *progress;
    act_call_record_t record = act_live_record (call, status, outcome, &progress);
    act_store_update_call (self->store, &record);
    free (progress);
    //  Those who wait: its own client when it has an output path, and
    //  each repeat of its _id that has one
    for (size_t i = 0; i < call->nrecipients; i++) {
        act_live_recipient_t *to = &call->recipients [i];
        act_out_t *out = act_outbox_reply_to (self->outbox, to->client, to->client_size,
                                              to->request, to->request_size, "DONE", true);
        act_out_owner (out, to->owner, call->context->id);
        act_out_addstr (out, call->id);
        act_out_addstr (out, outcome);
    }
    s_call_told (self, call, status, outcome);
    if (self->outcome.room > S_OUTCOME_ROOM) {
        free (self->outcome.data);              //  Not held after a large one
        self->outcome = (act_buf_t) { 0 };
    }
    if (!streq (status, "ok")) {
        char shown [ACT_LOG_CUT + 4];
        act_log (LOG_INFO, "call %s (%s) ended %s: %s", call->id, call->activity->name,
                 status, act_log_cut (json_string_value (json_object_get (error, "message")),
                                   shown));
    }
    json_decref (error);
    s_call_wake (self, call);
    act_flow_key (self, call, false);
    call->context->live--;
    call->context->used = act_clock_ms ();
    act_activity_t *activity = call->activity;
    activity->done++;
    //  The names differ in their first byte: one comparison of a string
    for (size_t i = 0; i < ACT_POOL_OUTCOMES; i++)
        if (status [0] == act_pool_outcome_names [i][0]
        &&  streq (status, act_pool_outcome_names [i]))
            activity->outcomes [i]++;
    zhashx_delete (self->calls, call->id);      //  Destroys the call
    act_pool_idle (self->pool, activity);       //  Its last call may have ended
}

//  Cancel a live call: a running task gets CANCEL at its worker, whose
//  slot stays taken until it answers
static void
s_call_cancel (act_flow_t *self, act_live_t *call)
{
    if (call->state == ACT_LIVE_RUNNING)
        act_out_addstr (act_worker_send (self->outbox, call->worker, "CANCEL"), call->task);
    act_flow_finish (self, call, "cancelled",
                   act_flow_error_json (ACT_E_CANCELLED, "cancelled by a client"), NULL, 0, 0);
}

void
act_flow_end (act_flow_t *self, act_live_t *call, const char *status, const char *code,
              const char *message)
{
    act_flow_finish (self, call, status, act_flow_error_json (code, message), NULL, 0, 0);
}

void
act_flow_attempt_failed (act_flow_t *self, act_live_t *call, const char *code,
                         const char *message)
{
    act_flow_failed (self, call, act_flow_error_json (code, message), true, true);
}

void
act_flow_retry_now (act_flow_t *self, act_live_t *call)
{
    s_call_queue_saved (self, call, true);
}

void
act_flow_settle (act_flow_t *self)
{
    //  First in, first out: calls that become ready together are queued
    //  in the order they were accepted; entries added meanwhile run too
    for (size_t next = 0; next < self->ntodo; next++) {
        act_live_t *call = act_flow_lookup (self, self->todo [next]);
        //  One recovered queued is dispatched once its context has loaded
        if (call && call->state == ACT_LIVE_QUEUED && !call->backoff)
            s_dispatch_activity (self, call->activity);
        if (!call || call->state != ACT_LIVE_WAITING || call->waiting_on)
            continue;
        act_err_t err = { 0 };
        act_live_eval_t eval = act_live_evaluate (call, &err);
        if (eval == ACT_LIVE_READY)
            s_call_queue_saved (self, call, false);
        else
        if (eval == ACT_LIVE_UNRESOLVED)
            act_flow_finish (self, call, "skipped", act_flow_error_json (err.code, err.message),
                           NULL, 0, 0);
    }
    self->ntodo = 0;
}


//  --------------------------------------------------------------------------
//  Cancel by id (STATUS, the tools and the end of a context are in
//  act_flow_calls.c)

void
act_flow_cancel (act_flow_t *self, act_live_t *call)
{
    s_call_cancel (self, call);
}


//  --------------------------------------------------------------------------
//  The flow itself

act_flow_t *
act_flow_new (act_settings_t *settings, act_store_t *store, act_cache_t *cache,
              act_pool_t *pool, act_outbox_t *outbox, act_watches_t *watches)
{
    act_flow_t *self = (act_flow_t *) calloc (1, sizeof (act_flow_t));
    if (!self)
        return NULL;
    //  An answer is kept until its effects are durable where commits can
    //  fail (act_flow_kept.c)
    self->keep_always = self->keeping = !streq (act_store_backend (store), "memory");
    self->scan = act_scan_new ();
    if (!self->scan) {
        free (self);
        return NULL;
    }
    self->settings = settings;
    self->store = store;
    self->cache = cache;
    self->pool = pool;
    self->outbox = outbox;
    self->batch = 1;
    //  A TASK that a failed commit drops never reached its worker: its
    //  slot is free again (the worker keeps its other tasks: act_flow_attach)
    act_outbox_on_unsent (outbox, act_pool_unsent, pool);
    self->watches = watches;
    self->timers = act_timers_new ();
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, s_call_destructor);
    //  Keyed by each call's own id text, which lives as long as its entry
    //  (deleting the entry destroys the call): no copy of the key
    zhashx_set_key_duplicator (self->calls, NULL);
    zhashx_set_key_destructor (self->calls, NULL);
    self->keys = zhashx_new ();
    self->tools = act_tools_new (settings, pool);
    act_cache_set_loaded (cache, act_flow_recover, self);
    return self;
}

void
act_flow_destroy (act_flow_t **self_p)
{
    if (self_p && *self_p) {
        act_flow_t *self = *self_p;
        zhashx_destroy (&self->keys);
        zhashx_destroy (&self->calls);
        act_timers_destroy (&self->timers);
        act_scan_destroy (&self->scan);
        free (self->outcome.data);
        act_tools_destroy (&self->tools);
        act_flow_kept_destroy (self);
        zhashx_destroy (&self->began);
        free (self->todo);
        free (self);
        *self_p = NULL;
    }
}

void
act_flow_stop (act_flow_t *self)
{
    self->stopping = true;
}

bool
act_flow_stopping (act_flow_t *self)
{
    return self->stopping;
}

void
act_flow_forget (act_flow_t *self)
{
    zhashx_purge (self->keys);
    zhashx_purge (self->calls);
    act_timers_clear (self->timers);
    self->timers_kept = 0;
    self->ntodo = 0;
    memset (self->counts, 0, sizeof self->counts);
    act_pool_forget_calls (self->pool);
}
