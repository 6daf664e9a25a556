/*  =========================================================================
    act_flow_answers - a worker's answers to its tasks: a RESULT, a FAIL,
    PROGRESS, a worker too busy, and a worker lost with the tasks it held
    (see act_flow.h). What an answer does to its call (its end, a retry)
    is act_flow.c's.
    ========================================================================= */

#include "act_flow_int.h"

//  The live call of task held by worker, when the task is still the
//  call's current attempt; NULL when it timed out, was cancelled or was
//  dispatched again
static act_live_t *
s_task_call (act_flow_t *self, act_worker_t *worker, const char *task)
{
    uint64_t number, attempt;
    if (!act_task_parse (task, &number, &attempt))
        return NULL;
    act_live_t *call = act_flow_lookup (self, number);
    if (call && call->state == ACT_LIVE_RUNNING && call->worker == worker && streq (call->task, task))
        return call;
    return NULL;
}

//  Parse a JSON frame no larger than max_message_bytes; NULL with err
static json_t *
s_frame_json (act_flow_t *self, zmq_msg_t *frame, act_err_t *err)
{
    if (zmq_msg_size (frame) > (size_t) self->settings->max_message_bytes) {
        act_err_set (err, ACT_E_TOO_LARGE, "%zu bytes is over max_message_bytes",
                     zmq_msg_size (frame));
        return NULL;
    }
    return act_json_parse ((const char *) zmq_msg_data (frame), zmq_msg_size (frame), err);
}

//  Log a FAIL or PROGRESS body that did not parse (what: the command),
//  which PROTOCOL.md section 3 has count as {} or be ignored: without the
//  line, an operator saw "the activity failed" or no progress, and no why.
//  Per worker and command, so that a worker that keeps at it costs a line
//  now and then (act_log_peer)
static void
s_bad_body (act_worker_t *worker, const char *what, const char *task, const act_err_t *err)
{
    act_log_peer (LOG_WARNING, worker->key, what,
                  "worker %s: %s for task %s %s: %s", worker->name, what, task,
                  streq (what, "bad FAIL body")? "read as {}": "ignored", err->message);
}

//  Validate a result frame no larger than max_message_bytes with the
//  scanner (the verdicts of act_json_parse, without a tree): 0, or -1 with
//  err
static int
s_frame_scan (act_flow_t *self, zmq_msg_t *frame, act_err_t *err)
{
    if (zmq_msg_size (frame) > (size_t) self->settings->max_message_bytes)
        return act_err_set (err, ACT_E_TOO_LARGE, "%zu bytes is over max_message_bytes",
                            zmq_msg_size (frame));
    return act_scan (self->scan, (const char *) zmq_msg_data (frame), zmq_msg_size (frame), err);
}

void
act_flow_result (act_flow_t *self, act_worker_t *worker, const char *task, zmq_msg_t *body,
                 zmq_msg_t *branch_frame)
{
    act_live_t *call = s_task_call (self, worker, task);
    //  A fire-and-forget call's result is thrown away: its answer is kept
    //  without it
    bool discarded = call && !call->call->output;
    if (self->keeping && act_flow_kept_add (self, worker, task, discarded? NULL: body,
                                            branch_frame, false, call)
    &&  !call)
        return;                 //  Kept, its slot taken, for its call's recovery
    act_worker_release (worker, task);          //  Its slot is free again
    act_err_t err = { 0 };
    bool valid = false;
    uint64_t branch = 0;
    if (!call)
        act_log (LOG_DEBUG, "late result for task %s from %s dropped",
                 task, worker->name);
    else
    if (!call->call->output)
        //  Fire-and-forget: the result is thrown away, so any body will do
        //  (PROTOCOL.md section 2) and it is not even parsed
        act_flow_finish (self, call, "ok", NULL, NULL, 0, 0);
    else
    if ((valid = s_frame_scan (self, body, &err) == 0)
    &&  (!branch_frame || act_decimal_parse ((const char *) zmq_msg_data (branch_frame),
                                             zmq_msg_size (branch_frame), 1000000, &branch))) {
        //  The worker's bytes are the written value: stored as they came,
        //  and parsed only when something reads them (act_ctx_output_text).
        //  A number not in its shortest form ("1E2", "0.10") is written
        //  again first, as DONE, the store and every view must show it
        //  (SEMANTICS.md section 1)
        char *dumped = act_scan_numbers_dumped (self->scan)
                     ? NULL: act_json_redump ((const char *) zmq_msg_data (body),
                                              zmq_msg_size (body));
        act_flow_finish (self, call, "ok", NULL,
                       dumped? dumped: (const char *) zmq_msg_data (body),
                       dumped? strlen (dumped): zmq_msg_size (body), (long long) branch);
        free (dumped);
    }
    else {
        char *message = zsys_sprintf ("worker %s sent a bad result: %s", worker->name,
                                      valid? "the branch is not a decimal number up to 1000000"
                                           : err.message);
        act_flow_failed (self, call, act_flow_error_json (ACT_E_ACTIVITY_FAILED, message),
                               false, false);
        zstr_free (&message);
    }
    act_flow_worker_ready (self, worker);
}

void
act_flow_fail (act_flow_t *self, act_worker_t *worker, const char *task, zmq_msg_t *body)
{
    act_live_t *call = s_task_call (self, worker, task);
    if (self->keeping && act_flow_kept_add (self, worker, task, body, NULL, true, call)
    &&  !call)
        return;                 //  Kept, its slot taken, for its call's recovery
    act_worker_release (worker, task);
    if (!call)
        act_log (LOG_DEBUG, "late failure for task %s from %s dropped",
                 task, worker->name);
    else {
        act_err_t err = { 0 };
        json_t *body_json = s_frame_json (self, body, &err);
        if (!body_json)
            s_bad_body (worker, "bad FAIL body", task, &err);
        const char *code = json_string_value (json_object_get (body_json, "code"));
        const char *message = json_string_value (json_object_get (body_json, "message"));
        json_t *retryable = json_object_get (body_json, "retryable");
        json_t *error = act_flow_error_json (code && *code? code: ACT_E_ACTIVITY_FAILED,
                                      message? message: "the activity failed");
        //  Extra fields of the worker's error object are kept
        const char *key;
        json_t *value;
        json_object_foreach (body_json, key, value)
            if (!streq (key, "code") && !streq (key, "message") && !streq (key, "retryable"))
                json_object_set (error, key, value);
        act_flow_failed (self, call, error, !json_is_false (retryable), true);
        json_decref (body_json);
    }
    act_flow_worker_ready (self, worker);
}

void
act_flow_progress (act_flow_t *self, act_worker_t *worker, const char *task, zmq_msg_t *body)
{
    act_live_t *call = s_task_call (self, worker, task);
    act_err_t err = { 0 };
    json_t *details = call? s_frame_json (self, body, &err): NULL;
    if (call && !details)
        s_bad_body (worker, "bad PROGRESS body", task, &err);
    if (details) {
        json_decref (call->progress);
        call->progress = details;
        act_live_save (call, self->store);
    }
}

bool
act_flow_busy (act_flow_t *self, act_worker_t *worker)
{
    //  The task ids are the keys (a value may outlive its call)
    for (void *item = zhashx_first (worker->tasks); item; item = zhashx_next (worker->tasks))
        if (s_task_call (self, worker, (const char *) zhashx_cursor (worker->tasks)))
            return true;
    return false;
}

size_t
act_flow_cancel_orphans (act_flow_t *self, act_outbox_t *outbox)
{
    size_t cancelled = 0;
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool)) {
        zlistx_t *tasks = zhashx_keys (worker->tasks);
        for (char *task = zlistx_first (tasks); task; task = zlistx_next (tasks))
            if (!s_task_call (self, worker, task) && act_worker_orphan (worker, task)) {
                act_out_addstr (act_worker_send (outbox, worker, "CANCEL"), task);
                cancelled++;
            }
        zlistx_destroy (&tasks);
    }
    if (cancelled)
        act_log (LOG_NOTICE, "%zu tasks cancelled at their workers: their calls were not "
                 "kept (a failed commit), or run again", cancelled);
    //  Recovery is done: the attempts not attached again are over
    if (self->began)
        zhashx_purge (self->began);
    return cancelled;
}

//  zlistx comparator: the call with the higher id first
static int
s_newer_first (const void *a, const void *b)
{
    uint64_t one = ((const act_live_t *) a)->number, other = ((const act_live_t *) b)->number;
    return one > other? -1: one < other? 1: 0;
}

void
act_flow_worker_lost (act_flow_t *self, act_worker_t *worker, const char *why)
{
    act_log_burst (LOG_NOTICE, "worker lost", "worker %s lost (%s): %zu tasks held",
                   worker->name, why, zhashx_size (worker->tasks));
    //  Out of its activities first: the tasks it held go back to their
    //  queues and must never be dispatched to it again
    act_pool_detach (self->pool, worker);
    //  Each retry goes to the front of its queue: the calls are failed
    //  newest first, so that they stand there oldest first (first in,
    //  first out: PROTOCOL.md 1), whatever the order of the worker's table
    zlistx_t *calls = zlistx_new ();
    zlistx_set_comparator (calls, s_newer_first);
    zlistx_t *tasks = zhashx_keys (worker->tasks);
    for (char *task = zlistx_first (tasks); task; task = zlistx_next (tasks)) {
        act_live_t *call = s_task_call (self, worker, task);
        if (call)
            zlistx_add_end (calls, call);
    }
    zlistx_destroy (&tasks);
    zlistx_sort (calls);
    for (act_live_t *call = zlistx_first (calls); call; call = zlistx_next (calls)) {
        char *message = zsys_sprintf ("worker %s was lost (%s) during attempt %lld",
                                      worker->name, why, call->attempts);
        act_flow_failed (self, call, act_flow_error_json (ACT_E_WORKER_LOST, message),
                               true, false);
        zstr_free (&message);
    }
    zlistx_destroy (&calls);
    act_pool_remove (self->pool, worker);
}
