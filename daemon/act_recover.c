/*  =========================================================================
    act_recover - recovery: the calls of a context loaded from the store
    that had not ended run again (part of act_flow; see act_flow_int.h).

    A call whose attempt is stored running when it is recovered was
    running when actd crashed: that attempt counts, and a call whose
    attempts are then used up ends worker_lost, so that a call that kills
    actd does not run at every start. actd's own interruptions are not
    crashes and do not end a call: a clean stop stores the calls still
    running as queued (act_flow_park), and after a failed commit
    (act_flow_reset) a call stored running was running in this run. Such
    a call runs again as its next attempt, even one past its _retry's
    max_attempts: its attempts count every TASK sent, so that a task id
    ("<call>.<attempt>") is never sent twice, even across restarts; but
    when a worker still holds that attempt's task (a failed commit does
    not disconnect workers), the call is running there again
    (act_flow_attach), and the tasks no call took back are cancelled at
    their workers (act_flow_cancel_orphans).
    ========================================================================= */

#include <inttypes.h>
#include "act_flow_int.h"

//  Start a recovered call in the state its references give it now, as a
//  call just accepted starts: waiting when it waits for an earlier call,
//  queued (and stored so) when it may run, skipped when a reference is
//  absent for good. A queued one is dispatched by act_flow_settle, once
//  its context has loaded, so that a DELETE or CANCEL that loaded it acts
//  before any TASK leaves. STATUS and the watches never see it waiting
//  for nothing (SEMANTICS.md section 7).
//  A call stored in its retry delay (retry_ms left of it) waits for the
//  rest of it, queued, and then goes to the front of its queue, as it
//  would have without the restart (docs/protocol.md 3.5).
static void
s_resume (act_flow_t *self, act_live_t *call, long long retry_ms)
{
    act_err_t err = { 0 };
    act_live_eval_t eval = act_live_evaluate (call, &err);
    if (eval == ACT_LIVE_WAIT)
        act_flow_enter (self, call, ACT_LIVE_WAITING);
    else
    if (eval == ACT_LIVE_READY && retry_ms > 0) {
        //  Its record is stored queued already, and its resume state
        //  still says when the delay ends
        act_flow_backoff (self, call, retry_ms);
        act_live_retry_wait (call, retry_ms);
    }
    else
    if (eval == ACT_LIVE_READY) {
        act_flow_enqueue (self, call, false);
        act_live_save (call, self->store);
        act_flow_todo (self, call->number);
    }
    else
        act_flow_end (self, call, "skipped", err.code, err.message);
}

//  Bring back one stored call that had not ended
static int
s_recover_one (const json_t *record, void *arg)
{
    act_flow_t *self = (act_flow_t *) arg;
    uint64_t number = (uint64_t) json_integer_value (json_object_get (record, "call_id"));
    const char *context_id = json_string_value (json_object_get (record, "context"));
    act_context_t *context = context_id? act_cache_lookup (self->cache, context_id): NULL;
    if (act_flow_lookup (self, number) || !context)
        return 0;               //  Live already, or not this context's
    act_err_t err = { 0 };
    act_call_t *parsed = act_call_parse (json_object_get (record, "call"), &err);
    act_live_t *call = parsed? act_live_new (self->pool, context, parsed): NULL;
    if (!call) {
        act_log (LOG_ERR, "stored call %" PRIu64 " cannot be recovered: %s", number,
                 err.message);
        return 0;
    }
    act_live_number (call, number);
    call->recovered = true;
    act_pool_admit (self->pool, call->activity, false);    //  Accepted before: not refused
    call->attempts = json_integer_value (json_object_get (record, "attempts"));
    json_t *progress = json_object_get (record, "progress");
    call->progress = progress? json_incref (progress): NULL;
    const char *client = json_string_value (json_object_get (record, "client"));
    const char *request = json_string_value (json_object_get (record, "request"));
    if (client && request && call->call->output)
        act_live_recipient_hex (call, client, request);
    //  The requests that repeated its _id, and its retry delay (schema 10)
    const char *state = json_string_value (json_object_get (record, "state"));
    long long retry_ms = act_live_resume (call, json_object_get (record, "resume"), state,
                                          zclock_time ());
    zhashx_insert (self->calls, call->id, call);
    context->live++;
    act_flow_key (self, call, true);
    call->producer = act_deps_register (context->deps, call->call->output,
                                        call->call->instance, call->number, call);
    //  An attempt that was running when actd crashed counts: with the
    //  attempts used up, the call ends now rather than run once more than
    //  its _retry allows. One lost with a failed commit of this run is no
    //  crash (see above).
    if (state && streq (state, "running") && act_flow_attach (self, call))
        ;                       //  A worker still runs that attempt
    else
    if (state && streq (state, "running") && !self->reset
    &&  call->attempts >= call->retry.max_attempts) {
        char *message = zsys_sprintf ("actd stopped during attempt %lld, the last of %lld "
                                      "allowed", call->attempts, call->retry.max_attempts);
        act_flow_end (self, call, "error", ACT_E_WORKER_LOST, message);
        zstr_free (&message);
    }
    else
        s_resume (self, call, retry_ms);
    return 0;
}

//  The cache's loaded hook: recover the context's calls, oldest first (an
//  older call may produce for a newer one, and both are in the context)
void
act_flow_recover (void *arg, act_context_t *context)
{
    act_flow_t *self = (act_flow_t *) arg;
    act_store_pending_in (self->store, context->id, s_recover_one, self);
}

//  zhashx destructor of a stamp
static void
s_stamp_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

void
act_flow_reset (act_flow_t *self)
{
    //  When each running attempt began, so that one attached again keeps
    //  its deadline: an outage of the store neither extends an attempt
    //  past its _timeout nor, through failures in a row, keeps it from
    //  ever timing out. Out of memory, an attempt's deadline counts again
    //  from its attach, as it did before.
    if (!self->began && (self->began = zhashx_new ()))
        zhashx_set_destructor (self->began, s_stamp_destroy);
    for (act_live_t *call = zhashx_first (self->calls); call && self->began;
         call = zhashx_next (self->calls))
        if (call->state == ACT_LIVE_RUNNING && call->worker) {
            long long *began = (long long *) malloc (sizeof *began);
            if (began) {
                *began = call->started_at;
                act_live_task_id (call);
                zhashx_update (self->began, call->task, began);
            }
        }
    act_flow_forget (self);
    //  For the rest of the run: a call left running by a crash of the last
    //  run and not recovered yet when a commit fails then gets one attempt
    //  more, a smaller harm than ending calls that never crashed anything
    self->reset = true;
}

void
act_flow_park (act_flow_t *self)
{
    for (act_live_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls)) {
        if (call->state != ACT_LIVE_RUNNING)
            continue;
        //  The record only: in memory it is still running, as the last
        //  lines of the log say
        char *progress;
        act_call_record_t record = act_live_record (call, "queued", NULL, &progress);
        act_store_update_call (self->store, &record);
        free (progress);
    }
}
