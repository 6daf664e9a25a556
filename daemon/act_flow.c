/*  =========================================================================
    act_flow - a call's path through the broker (see act_flow.h).

    Reading order, which is the order of a call's life: the call and its
    states; submit (validate, number, evaluate, store); dependencies;
    queue and dispatch; the worker's answer; failures and retries; the
    output and the end; recovery of a loaded context's calls; STATUS and
    CANCEL; timers.
    ========================================================================= */

#include "act_flow.h"
#include "act_timers.h"

//  A call's state. S_NONE: made, nothing counted; S_NEW: prepared, its
//  place in its activity's backlog reserved until it is accepted or not
typedef enum { S_NONE, S_NEW, S_WAITING, S_QUEUED, S_RUNNING, S_ENDED } s_state_t;
static const char *s_state_names [] = {
    "none", "new", "waiting", "queued", "running", "ended"
};

//  What a timer of a call means
typedef enum { T_DEADLINE, T_SCHEDULE, T_RETRY } s_timer_type_t;

//  A later call waiting for a producer, in one evaluation round
typedef struct {
    uint64_t number;            //  The waiting call
    uint32_t round;             //  Its round when it started waiting
} s_waiter_t;

//  Where a DONE goes
typedef struct {
    zframe_t *client;           //  Routing id of the client socket
    zframe_t *request;          //  Request id to echo
} s_recipient_t;

typedef struct {
    uint64_t number;            //  Call id as a number; also its order
    char id [24];               //  Call id as text
    act_context_t *context;     //  Context it belongs to
    act_call_t *call;           //  The parsed call, holding its JSON
    char *text;                 //  The call as submitted (JSON text)
    act_activity_t *activity;   //  Activity (its _tool)
    s_state_t state;            //  Where it is in its life
    bool backoff;               //  Queued, but waiting its retry delay
    long long attempts;         //  Dispatches to a worker so far
    act_retry_t retry;          //  Retry policy, every field set
    long long timeout_ms;       //  Start-to-close limit of one attempt
    act_worker_t *worker;       //  Worker running the current attempt
    char task [48];             //  Current task id: "<call>.<attempt>"
    void *queue_handle;         //  Handle in activity->queue when queued
    uint32_t timer;             //  Generation: timers of older ones are void
    uint32_t round;             //  Evaluation round (dependencies)
    size_t waiting_on;          //  Producers not ended in this round
    zlistx_t *waiters;          //  s_waiter_t * of calls waiting for it
    act_producer_t *producer;   //  Its targets in the dependency index
    zlistx_t *recipients;       //  s_recipient_t * that get its DONE
    json_t *progress;           //  Latest PROGRESS details, or NULL
    uint64_t stamp;             //  Marks it found in one evaluation
} s_call_t;

struct _act_flow_t {
    act_settings_t *settings;   //  Limits and defaults (borrowed)
    act_store_t *store;         //  Durable state (borrowed)
    act_cache_t *cache;         //  Contexts in memory (borrowed)
    act_pool_t *pool;           //  Activities and workers (borrowed)
    act_outbox_t *outbox;       //  Replies and tasks of the pass (borrowed)
    act_timers_t *timers;       //  Deadlines, schedule timeouts, retries
    zhashx_t *calls;            //  Call id -> s_call_t, calls not ended
    zhashx_t *keys;             //  context<US>_id -> s_call_t
    uint64_t *todo;             //  Calls to evaluate again (numbers)
    size_t ntodo;               //  Entries in todo
    size_t todo_size;           //  Slots allocated
    uint64_t stamp;             //  Current evaluation's mark
    size_t counts [S_ENDED];    //  Live calls per state (waiting, ...)
    bool stopping;              //  No new calls, no dispatch
};

static void s_call_finish (act_flow_t *self, s_call_t *call, const char *status,
                           json_t *error, const json_t *result, const char *result_text,
                           long long branch);
static void s_call_queue (act_flow_t *self, s_call_t *call, bool front);
static void s_dispatch_activity (act_flow_t *self, act_activity_t *activity);
static void s_recover (void *arg, act_context_t *context);

static json_t *
s_error_json (const char *code, const char *message)
{
    return json_pack ("{ssss}", "code", code, "message", message);
}


//  --------------------------------------------------------------------------
//  The call and its states

static s_call_t *
s_call_lookup (act_flow_t *self, uint64_t number)
{
    char id [24];
    snprintf (id, sizeof id, "%" PRIu64, number);
    return (s_call_t *) zhashx_lookup (self->calls, id);
}

//  Give the call its number (and id text)
static void
s_call_number (s_call_t *call, uint64_t number)
{
    call->number = number;
    snprintf (call->id, sizeof call->id, "%" PRIu64, number);
}

//  Move the call to state: undo what the old state counted and held, then
//  count the new one. The one place where the counters change; it also
//  voids the call's pending timer.
static void
s_call_enter (act_flow_t *self, s_call_t *call, s_state_t state)
{
    act_activity_t *activity = call->activity;
    call->timer++;
    switch (call->state) {
        case S_NEW:
        case S_WAITING:
            activity->backlog--;
            break;
        case S_QUEUED:
            activity->queued--;
            activity->backlog--;
            if (call->queue_handle)
                zlistx_delete (activity->queue, call->queue_handle);
            call->queue_handle = NULL;
            call->backoff = false;
            break;
        case S_RUNNING:
            activity->running--;
            call->worker = NULL;
            break;
        default:
            break;
    }
    if (call->state > S_NEW && call->state < S_ENDED)
        self->counts [call->state]--;
    call->state = state;
    if (state > S_NEW && state < S_ENDED)
        self->counts [state]++;
    if (state == S_NEW || state == S_WAITING || state == S_QUEUED)
        activity->backlog++;
    if (state == S_QUEUED)
        activity->queued++;
    if (state == S_RUNNING)
        activity->running++;
}

static void
s_timer_set (act_flow_t *self, s_call_t *call, s_timer_type_t type, long long at)
{
    act_timer_t timer = { at, call->number, call->timer, (int) type };
    if (act_timers_add (self->timers, timer))
        act_log (LOG_ERR, "out of memory for a timer of call %s", call->id);
}

static void
s_recipient_destroy (void **item)
{
    s_recipient_t *recipient = (s_recipient_t *) *item;
    zframe_destroy (&recipient->client);
    zframe_destroy (&recipient->request);
    free (recipient);
    *item = NULL;
}

//  DONE of call goes (also) to this client's request; once per request
static void
s_recipient_add (s_call_t *call, zframe_t *client, zframe_t *request)
{
    if (!client)
        return;
    for (s_recipient_t *known = zlistx_first (call->recipients); known;
         known = zlistx_next (call->recipients))
        if (zframe_eq (known->client, client) && zframe_eq (known->request, request))
            return;
    s_recipient_t *recipient = malloc (sizeof *recipient);
    recipient->client = zframe_dup (client);
    recipient->request = zframe_dup (request);
    zlistx_add_end (call->recipients, recipient);
}

//  A call of context from its JSON, and its text as submitted (NULL: made
//  from the JSON), in state S_NONE. NULL with err when it is not a call.
static s_call_t *
s_call_new (act_flow_t *self, act_context_t *context, json_t *json, const char *text,
            act_err_t *err)
{
    act_call_t *parsed = act_call_parse (json, err);
    if (!parsed)
        return NULL;
    s_call_t *call = calloc (1, sizeof *call);
    call->call = parsed;
    call->text = text? strdup (text): act_json_dump (json);
    call->context = context;
    call->activity = act_pool_activity (self->pool, parsed->tool);
    const act_activity_settings_t *defaults = call->activity->settings;
    call->retry = defaults->retry;
    if (parsed->retry.max_attempts > 0)
        call->retry.max_attempts = parsed->retry.max_attempts;
    if (parsed->retry.initial_ms >= 0)
        call->retry.initial_ms = parsed->retry.initial_ms;
    if (parsed->retry.backoff >= 1.0)
        call->retry.backoff = parsed->retry.backoff;
    if (parsed->retry.max_ms >= 0)
        call->retry.max_ms = parsed->retry.max_ms;
    call->timeout_ms = parsed->timeout_ms > 0? parsed->timeout_ms: defaults->timeout_ms;
    call->waiters = zlistx_new ();
    zlistx_set_destructor (call->waiters, (zlistx_destructor_fn *) zstr_free);
    call->recipients = zlistx_new ();
    zlistx_set_destructor (call->recipients, s_recipient_destroy);
    return call;
}

//  Free the call (its counters must be settled: S_NONE or S_ENDED)
static void
s_call_destroy (s_call_t **call_p)
{
    s_call_t *call = *call_p;
    if (!call)
        return;
    act_deps_unregister (call->context->deps, &call->producer);
    act_call_destroy (&call->call);
    free (call->text);
    json_decref (call->progress);
    zlistx_destroy (&call->waiters);
    zlistx_destroy (&call->recipients);
    free (call);
    *call_p = NULL;
}

static void
s_call_destructor (void **item)
{
    s_call_destroy ((s_call_t **) item);
}

//  Drop a call that was never accepted: release its reservation, free it
static void
s_call_drop (act_flow_t *self, s_call_t **call_p)
{
    if (*call_p && (*call_p)->state != S_NONE)
        s_call_enter (self, *call_p, S_NONE);
    s_call_destroy (call_p);
}

//  The call's record for the store, in state (texts borrowed; *progress
//  is the caller's to free)
static act_call_record_t
s_record (s_call_t *call, const char *state, const char *outcome, char **progress)
{
    *progress = call->progress? act_json_dump (call->progress): NULL;
    return (act_call_record_t) {
        call->number, call->context->id, state, call->attempts, call->text,
        call->call->id, outcome, *progress, NULL, NULL
    };
}

//  Store the call's current state (in the pass's batch)
static void
s_call_save (act_flow_t *self, s_call_t *call)
{
    char *progress;
    act_call_record_t record = s_record (call, s_state_names [call->state], NULL, &progress);
    act_store_update_call (self->store, &record);
    free (progress);
}

//  Register the call under its _id in its context, or forget it there
static void
s_call_key (act_flow_t *self, s_call_t *call, bool add)
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
//  Dependencies. Each reference expression in the parameters is present,
//  pending (an earlier live call could write it), or impossible. A
//  fallback (||) waits while an earlier alternative is pending; a gate
//  (&&) needs every operand.

typedef enum { E_READY, E_WAIT, E_UNRESOLVED } s_eval_t;
typedef enum { X_PRESENT, X_PENDING, X_IMPOSSIBLE } s_presence_t;

static s_presence_t
s_expression (s_call_t *call, act_expr_t *expr, zlistx_t *found)
{
    act_ctx_t *ctx = call->context->ctx;
    for (size_t a = 0; a < expr->nalts; a++) {
        s_presence_t presence = X_PRESENT;
        zlistx_t *producers = zlistx_new ();
        for (size_t r = 0; r < expr->alts [a].nrefs && presence != X_IMPOSSIBLE; r++) {
            act_ref_t *ref = &expr->alts [a].refs [r];
            if (act_ctx_has (ctx, ref, call->call->instance))
                continue;
            if (act_deps_find (call->context->deps, ref, call->call->instance,
                               call->number, producers))
                presence = X_PENDING;
            else
                presence = X_IMPOSSIBLE;
        }
        if (presence == X_PENDING)
            for (s_call_t *p = zlistx_first (producers); p; p = zlistx_next (producers))
                zlistx_add_end (found, p);
        zlistx_destroy (&producers);
        if (presence != X_IMPOSSIBLE)
            return presence;
    }
    return X_IMPOSSIBLE;
}

//  Evaluate the call in a new round: ready, waiting (registered as a
//  waiter of each producer it needs, once each), or unresolved (err set)
static s_eval_t
s_evaluate (act_flow_t *self, s_call_t *call, act_err_t *err)
{
    call->round++;
    zlistx_t *found = zlistx_new ();
    s_eval_t result = E_READY;
    for (size_t i = 0; i < call->call->nrefs; i++) {
        act_expr_t *expr = call->call->refs [i];
        if (s_expression (call, expr, found) == X_IMPOSSIBLE) {
            act_err_set (err, ACT_E_UNRESOLVED_REFERENCE,
                         "'%.200s' is absent and no pending call of context %s can write it",
                         expr->text, call->context->id);
            result = E_UNRESOLVED;
            break;
        }
    }
    if (result == E_READY && zlistx_size (found)) {
        uint64_t stamp = ++self->stamp;
        call->waiting_on = 0;
        for (s_call_t *producer = zlistx_first (found); producer;
             producer = zlistx_next (found)) {
            if (producer->stamp == stamp)
                continue;
            producer->stamp = stamp;
            s_waiter_t *waiter = malloc (sizeof (s_waiter_t));
            *waiter = (s_waiter_t) { call->number, call->round };
            zlistx_add_end (producer->waiters, waiter);
            call->waiting_on++;
        }
        result = E_WAIT;
    }
    zlistx_destroy (&found);
    return result;
}

//  Calls whose producers all ended are evaluated again by act_flow_settle:
//  a worklist, not recursion, so a chain of 10 000 skipped calls costs no
//  stack
static void
s_todo_add (act_flow_t *self, uint64_t number)
{
    if (self->ntodo == self->todo_size) {
        self->todo_size = self->todo_size? self->todo_size * 2: 64;
        self->todo = realloc (self->todo, self->todo_size * sizeof (uint64_t));
    }
    self->todo [self->ntodo++] = number;
}


//  --------------------------------------------------------------------------
//  Submit: CALL and PLAN

//  The call accepted before in context under client key key: a live one,
//  or the record of one that ended (*record set). NULL when none.
static s_call_t *
s_call_by_key (act_flow_t *self, const char *context, const char *key, json_t **record)
{
    *record = NULL;
    char *full = act_key_new (context, key);
    s_call_t *call = (s_call_t *) zhashx_lookup (self->keys, full);
    free (full);
    if (!call) {
        uint64_t number = act_store_idem (self->store, context, key);
        if (number)
            *record = act_store_call (self->store, number);
    }
    return call;
}

//  An entry whose _id was seen before (in the store, live, or earlier in
//  this plan): its id and record go to ids and records, and the new call
//  is dropped. Returns false when the _id is new.
static bool
s_prepare_repeat (act_flow_t *self, s_call_t **calls, size_t index, json_t *ids,
                  json_t *records)
{
    s_call_t *call = calls [index];
    json_t *record;
    s_call_t *earlier = s_call_by_key (self, call->context->id, call->call->id, &record);
    for (size_t i = 0; !earlier && !record && i < index; i++)
        if (calls [i] && calls [i]->call->id && streq (calls [i]->call->id, call->call->id))
            earlier = calls [i];
    if (earlier) {
        json_array_append_new (ids, json_string (earlier->id));
        json_array_append_new (records, json_string (earlier->id));
    }
    else
    if (record) {
        char id [24];
        snprintf (id, sizeof id, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (record, "call_id")));
        json_array_append_new (ids, json_string (id));
        json_array_append_new (records, record);
    }
    else
        return false;
    s_call_drop (self, &calls [index]);
    return true;
}

//  Prepare one new entry: reserve its place, number it, evaluate it and
//  register its outputs. Returns its evaluation, or E_UNRESOLVED with err
//  (busy, internal, unresolved_reference) and the call dropped.
static s_eval_t
s_prepare_one (act_flow_t *self, s_call_t **call_p, act_err_t *err)
{
    s_call_t *call = *call_p;
    act_activity_t *activity = call->activity;
    if (activity->backlog >= (size_t) activity->settings->max_queue) {
        act_err_set (err, ACT_E_BUSY, "activity %s has %zu calls waiting (max_queue %lld)",
                     activity->name, activity->backlog, activity->settings->max_queue);
        s_call_drop (self, call_p);
        return E_UNRESOLVED;
    }
    s_call_enter (self, call, S_NEW);
    uint64_t number = act_store_next_call (self->store);
    if (number == 0) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not give out a call id");
        s_call_drop (self, call_p);
        return E_UNRESOLVED;
    }
    s_call_number (call, number);
    s_eval_t eval = s_evaluate (self, call, err);
    if (eval == E_UNRESOLVED)
        s_call_drop (self, call_p);
    else
        call->producer = act_deps_register (call->context->deps, call->call->output,
                                            call->call->instance, call->number, call);
    return eval;
}

//  Prepare the calls of a CALL (one) or PLAN (several), all or none:
//  validated, numbered, evaluated against the context and earlier calls,
//  their place in their activity's backlog reserved. Returns 0 and fills,
//  per entry: calls [i] (a new call, or NULL when the entry repeats an
//  _id), ids [i], and records [i] (null for a new call, the id of a live
//  call, or the record of an ended one). Or returns -1 with err naming the
//  entry, keeping nothing. Numbers of refused calls are not reused: a
//  wait they registered on a live call must never match a later call.
static int
s_prepare (act_flow_t *self, act_context_t *context, json_t *entries, const char *call_text,
           s_call_t **calls, s_eval_t *evals, json_t *ids, json_t *records, bool plan,
           act_err_t *err)
{
    size_t index;
    json_t *entry;
    json_array_foreach (entries, index, entry) {
        calls [index] = s_call_new (self, context, entry, plan? NULL: call_text, err);
        if (!calls [index])
            break;
        if (calls [index]->call->id && s_prepare_repeat (self, calls, index, ids, records))
            continue;
        evals [index] = s_prepare_one (self, &calls [index], err);
        if (!calls [index])
            break;
        json_array_append_new (ids, json_string (calls [index]->id));
        json_array_append_new (records, json_null ());
    }
    if (index == json_array_size (entries))
        return 0;
    if (plan && json_array_size (entries) > 1) {
        char *message = strdup (err->message);
        act_err_set (err, err->code, "call %zu: %s", index, message);
        free (message);
    }
    for (size_t i = 0; i < index; i++)
        s_call_drop (self, &calls [i]);
    return -1;
}

//  Make a prepared call live: store it, index it, start it
static void
s_accept (act_flow_t *self, s_call_t *call, s_eval_t eval, zframe_t *client,
          zframe_t *request)
{
    act_cache_store (self->cache, call->context);
    zhashx_insert (self->calls, call->id, call);
    call->context->live++;
    s_call_key (self, call, true);
    if (call->call->output)
        s_recipient_add (call, client, request);
    char *progress;
    act_call_record_t record = s_record (call, eval == E_WAIT? "waiting": "queued", NULL,
                                         &progress);
    char *client_hex = client? zframe_strhex (client): NULL;
    char *request_hex = client? zframe_strhex (request): NULL;
    record.client = client_hex;
    record.request = request_hex;
    act_store_put_call (self->store, &record);
    free (client_hex);
    free (request_hex);
    free (progress);
    s_call_enter (self, call, S_WAITING);
    if (eval == E_READY)
        s_call_queue (self, call, false);
}

//  The outcome of a call that had already ended (an _id repeated), as DONE
static void
s_done_from_record (act_flow_t *self, json_t *record, zframe_t *client, zframe_t *request)
{
    json_t *call = json_object_get (record, "call");
    if (!json_object_get (call, "_outputPath"))
        return;
    json_t *outcome = json_object_get (record, "outcome");
    act_out_t *out = act_outbox_reply (self->outbox, client, request, "DONE", true);
    act_out_addstr (out, json_string_value (json_object_get (outcome, "call_id")));
    char *text = act_json_dump (outcome);
    act_out_addstr (out, text);
    free (text);
}

//  Answer an accepted CALL or PLAN: ACCEPTED, then for each repeated _id
//  its DONE now (ended) or when it ends (live)
static void
s_accepted (act_flow_t *self, zframe_t *client, zframe_t *request, json_t *ids,
            json_t *records, bool plan)
{
    act_out_t *out = act_outbox_reply (self->outbox, client, request, "ACCEPTED", true);
    if (plan) {
        char *text = act_json_dump (ids);
        act_out_addstr (out, text);
        free (text);
    }
    else
        act_out_addstr (out, json_string_value (json_array_get (ids, 0)));
    size_t index;
    json_t *record;
    json_array_foreach (records, index, record) {
        if (json_is_object (record))
            s_done_from_record (self, record, client, request);
        else
        if (json_is_string (record)) {
            s_call_t *earlier = zhashx_lookup (self->calls, json_string_value (record));
            if (earlier && earlier->call->output)
                s_recipient_add (earlier, client, request);
        }
    }
}

void
act_flow_submit (act_flow_t *self, zframe_t *client, zframe_t *request, const char *command,
                 const char *context_id, json_t *entries, const char *call_text, bool plan)
{
    act_err_t err = { 0 };
    act_context_t *context = NULL;
    if (self->stopping)
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
    else
        context = act_cache_get (self->cache, context_id, true, &err);
    if (!context) {
        act_outbox_error (self->outbox, client, request, command, &err);
        return;
    }
    size_t count = json_array_size (entries);
    s_call_t **calls = calloc (count, sizeof (s_call_t *));
    s_eval_t *evals = calloc (count, sizeof (s_eval_t));
    json_t *ids = json_array ();
    json_t *records = json_array ();
    if (s_prepare (self, context, entries, call_text, calls, evals, ids, records, plan, &err)) {
        act_outbox_error (self->outbox, client, request, command, &err);
        act_cache_release (self->cache, context);
        act_pool_prune (self->pool);
    }
    else {
        for (size_t i = 0; i < count; i++)
            if (calls [i])
                s_accept (self, calls [i], evals [i], client, request);
        s_accepted (self, client, request, ids, records, plan);
    }
    json_decref (ids);
    json_decref (records);
    free (calls);
    free (evals);
}


//  --------------------------------------------------------------------------
//  Queue and dispatch

//  Queue the call for a worker (at the front for a retry), then dispatch
static void
s_call_queue (act_flow_t *self, s_call_t *call, bool front)
{
    s_call_enter (self, call, S_QUEUED);
    zlistx_t *queue = call->activity->queue;
    call->queue_handle = front? zlistx_add_start (queue, call): zlistx_add_end (queue, call);
    s_timer_set (self, call, T_SCHEDULE,
                 act_clock_ms () + call->activity->settings->schedule_timeout_ms);
    s_dispatch_activity (self, call->activity);
}

//  Queue the call after its retry delay
static void
s_call_backoff (act_flow_t *self, s_call_t *call, long long delay)
{
    s_call_enter (self, call, S_QUEUED);
    call->backoff = true;
    s_timer_set (self, call, T_RETRY, act_clock_ms () + delay);
}

//  The meta of a TASK (PROTOCOL.md section 2), written by the JSON writer:
//  the instance is any 1-128 bytes of UTF-8, control characters included
static char *
s_task_meta (s_call_t *call)
{
    act_expr_t *output = call->call->output;
    json_t *meta = json_pack ("{sssssIsIsIsb}", "context", call->context->id,
        "call_id", call->id, "attempt", (json_int_t) call->attempts,
        "deadline_ms", (json_int_t) call->timeout_ms,
        "branches", (json_int_t) (output? output->nalts: 0), "discard", output == NULL);
    if (call->call->instance)
        json_object_set_new (meta, "instance", json_string (call->call->instance));
    char *text = act_json_dump (meta);
    json_decref (meta);
    return text;
}

//  The call's parameters went absent since it became ready (a value was
//  erased): wait again if a pending call can write it, else skip
static void
s_call_unready (act_flow_t *self, s_call_t *call, act_err_t *err)
{
    s_call_enter (self, call, S_WAITING);
    s_eval_t eval = s_evaluate (self, call, err);
    if (eval == E_WAIT)
        return;
    if (eval == E_READY)
        act_err_set (err, ACT_E_UNRESOLVED_REFERENCE, "%s", "a reference became absent");
    s_call_finish (self, call, "skipped", s_error_json (err->code, err->message), NULL, NULL, 0);
}

//  Send the call's next attempt to worker
static void
s_call_dispatch (act_flow_t *self, s_call_t *call, act_worker_t *worker)
{
    act_err_t err = { 0 };
    json_t *params = act_call_params (call->call, call->context->ctx, &err);
    if (!params) {
        s_call_unready (self, call, &err);
        return;
    }
    s_call_enter (self, call, S_RUNNING);
    call->attempts++;
    call->worker = worker;
    snprintf (call->task, sizeof call->task, "%s.%lld", call->id, call->attempts);
    zhashx_insert (worker->tasks, call->task, (void *) call->task);
    worker->used = act_clock_ms ();
    char *params_text = act_json_dump (params);
    act_out_t *out = act_worker_send (self->outbox, worker, "TASK");
    if (worker->protocol == ACT_PROTO_ACTW) {
        char *meta = s_task_meta (call);
        act_out_addstr (out, call->task);
        act_out_addstr (out, call->activity->name);
        act_out_addstr (out, params_text);
        act_out_addstr (out, meta);
        free (meta);
    }
    else {
        //  Majordomo REQUEST: [client address][empty][body]; the task id is
        //  the client address, which the worker echoes in its reply
        act_out_addstr (out, call->task);
        act_out_add (out, "", 0);
        act_out_addstr (out, params_text);
    }
    free (params_text);
    json_decref (params);
    s_timer_set (self, call, T_DEADLINE, act_clock_ms () + call->timeout_ms);
    s_call_save (self, call);
    act_log (LOG_DEBUG, "call %s (%s) attempt %lld sent to worker %s",
             call->id, call->activity->name, call->attempts, worker->name);
}

static void
s_dispatch_activity (act_flow_t *self, act_activity_t *activity)
{
    while (!self->stopping && zlistx_size (activity->queue)) {
        act_worker_t *worker = act_worker_pick (activity);
        if (!worker)
            break;
        s_call_dispatch (self, (s_call_t *) zlistx_first (activity->queue), worker);
    }
}

void
act_flow_worker_ready (act_flow_t *self, act_worker_t *worker)
{
    //  Serve its activities in turn, one call at a time, so a flooded
    //  activity cannot starve the others
    size_t count = zlistx_size (worker->activities);
    bool progress = true;
    while (progress && !self->stopping && act_worker_free (worker)) {
        progress = false;
        for (size_t k = 0; k < count && !progress; k++) {
            size_t index = (worker->cursor + k) % count;
            act_activity_t *activity = zlistx_first (worker->activities);
            for (size_t i = 0; i < index; i++)
                activity = zlistx_next (worker->activities);
            if (!zlistx_size (activity->queue))
                continue;
            act_worker_t *chosen = act_worker_pick (activity);
            if (!chosen)
                continue;
            s_call_dispatch (self, (s_call_t *) zlistx_first (activity->queue), chosen);
            worker->cursor = index + 1;
            progress = true;
        }
    }
}


//  --------------------------------------------------------------------------
//  The worker's answer

//  The live call of task held by worker, when the task is still the
//  call's current attempt; NULL when it timed out, was cancelled or was
//  dispatched again
static s_call_t *
s_task_call (act_flow_t *self, act_worker_t *worker, const char *task)
{
    const char *dot = strchr (task, '.');
    uint64_t number;
    if (!dot || !act_decimal_parse (task, (size_t) (dot - task), UINT64_MAX, &number))
        return NULL;
    s_call_t *call = s_call_lookup (self, number);
    if (call && call->state == S_RUNNING && call->worker == worker && streq (call->task, task))
        return call;
    return NULL;
}

//  Parse a JSON frame no larger than max_message_bytes; NULL with err
static json_t *
s_frame_json (act_flow_t *self, zframe_t *frame, act_err_t *err)
{
    if (zframe_size (frame) > (size_t) self->settings->max_message_bytes) {
        act_err_set (err, ACT_E_TOO_LARGE, "%zu bytes is over max_message_bytes",
                     zframe_size (frame));
        return NULL;
    }
    return act_json_parse ((const char *) zframe_data (frame), zframe_size (frame), err);
}

static void s_call_attempt_failed (act_flow_t *self, s_call_t *call, json_t *error,
                                   bool retryable, bool delay);

void
act_flow_result (act_flow_t *self, act_worker_t *worker, const char *task, zframe_t *body,
                 zframe_t *branch_frame)
{
    s_call_t *call = s_task_call (self, worker, task);
    zhashx_delete (worker->tasks, task);        //  Its slot is free again
    act_err_t err = { 0 };
    json_t *result = NULL;
    uint64_t branch = 0;
    if (!call)
        act_log (LOG_DEBUG, "late or repeated result for task %s from %s dropped",
                 task, worker->name);
    else
    if (!call->call->output)
        //  Fire-and-forget: the result is thrown away, so any body will do
        //  (PROTOCOL.md section 2) and it is not even parsed
        s_call_finish (self, call, "ok", NULL, NULL, NULL, 0);
    else
    if ((result = s_frame_json (self, body, &err))
    &&  (!branch_frame || act_decimal_parse ((const char *) zframe_data (branch_frame),
                                             zframe_size (branch_frame), 1000000, &branch))) {
        //  The worker's bytes are the written value: stored as they came
        char *text = strndup ((const char *) zframe_data (body), zframe_size (body));
        s_call_finish (self, call, "ok", NULL, result, text, (long long) branch);
        free (text);
    }
    else {
        char *message = zsys_sprintf ("worker %s sent a bad result: %s", worker->name,
                                      result? "the branch is not a decimal number up to 1000000"
                                            : err.message);
        s_call_attempt_failed (self, call, s_error_json (ACT_E_ACTIVITY_FAILED, message),
                               false, false);
        zstr_free (&message);
    }
    json_decref (result);
    act_flow_worker_ready (self, worker);
}

void
act_flow_fail (act_flow_t *self, act_worker_t *worker, const char *task, zframe_t *body)
{
    s_call_t *call = s_task_call (self, worker, task);
    zhashx_delete (worker->tasks, task);
    if (!call)
        act_log (LOG_DEBUG, "late or repeated failure for task %s from %s dropped",
                 task, worker->name);
    else {
        act_err_t err = { 0 };
        json_t *body_json = s_frame_json (self, body, &err);
        const char *code = json_string_value (json_object_get (body_json, "code"));
        const char *message = json_string_value (json_object_get (body_json, "message"));
        json_t *retryable = json_object_get (body_json, "retryable");
        json_t *error = s_error_json (code && *code? code: ACT_E_ACTIVITY_FAILED,
                                      message? message: "the activity failed");
        //  Extra fields of the worker's error object are kept
        const char *key;
        json_t *value;
        json_object_foreach (body_json, key, value)
            if (!streq (key, "code") && !streq (key, "message") && !streq (key, "retryable"))
                json_object_set (error, key, value);
        s_call_attempt_failed (self, call, error, !json_is_false (retryable), true);
        json_decref (body_json);
    }
    act_flow_worker_ready (self, worker);
}

void
act_flow_progress (act_flow_t *self, act_worker_t *worker, const char *task, zframe_t *body)
{
    s_call_t *call = s_task_call (self, worker, task);
    act_err_t err = { 0 };
    json_t *details = call? s_frame_json (self, body, &err): NULL;
    if (details) {
        json_decref (call->progress);
        call->progress = details;
        s_call_save (self, call);
    }
}

void
act_flow_worker_lost (act_flow_t *self, act_worker_t *worker, const char *why)
{
    act_log (LOG_NOTICE, "worker %s lost (%s): %zu tasks held", worker->name, why,
             zhashx_size (worker->tasks));
    //  Out of its activities first: the tasks it held go back to their
    //  queues and must never be dispatched to it again
    act_pool_detach (self->pool, worker);
    zlistx_t *tasks = zhashx_keys (worker->tasks);
    for (char *task = zlistx_first (tasks); task; task = zlistx_next (tasks)) {
        s_call_t *call = s_task_call (self, worker, task);
        if (call) {
            char *message = zsys_sprintf ("worker %s was lost (%s) during attempt %lld",
                                          worker->name, why, call->attempts);
            s_call_attempt_failed (self, call, s_error_json (ACT_E_WORKER_LOST, message),
                                   true, false);
            zstr_free (&message);
        }
    }
    zlistx_destroy (&tasks);
    act_pool_remove (self->pool, worker);
}


//  --------------------------------------------------------------------------
//  Failures and retries

//  The delay before the retry after attempt number call->attempts
static long long
s_retry_delay (s_call_t *call)
{
    double delay = (double) call->retry.initial_ms;
    for (long long i = 1; i < call->attempts && delay < call->retry.max_ms; i++)
        delay *= call->retry.backoff;
    return delay < call->retry.max_ms? (long long) delay: call->retry.max_ms;
}

//  One attempt failed: retry when the policy allows (after the backoff
//  delay when delay is set), else end the call. Takes ownership of error.
static void
s_call_attempt_failed (act_flow_t *self, s_call_t *call, json_t *error, bool retryable,
                       bool delay)
{
    const char *code = json_string_value (json_object_get (error, "code"));
    const char *message = json_string_value (json_object_get (error, "message"));
    //  While stopping, a retry is queued like any other but not
    //  dispatched: the call is recovered and runs at the next start
    if (retryable && call->attempts < call->retry.max_attempts) {
        long long wait = delay? s_retry_delay (call): 0;
        act_log (LOG_INFO, "call %s (%s) attempt %lld failed (%s: %s); retry in %lld ms",
                 call->id, call->activity->name, call->attempts, code, message, wait);
        json_decref (error);
        if (wait > 0)
            s_call_backoff (self, call, wait);
        else
            s_call_queue (self, call, true);
        s_call_save (self, call);
        return;
    }
    if (retryable)
        act_log (LOG_WARNING, "call %s (%s) failed after %lld attempts: %s: %s",
                 call->id, call->activity->name, call->attempts, code, message);
    bool timed_out = code && (streq (code, ACT_E_TIMEOUT) || streq (code, ACT_E_NO_WORKER));
    s_call_finish (self, call, timed_out? "timeout": "error", error, NULL, NULL, 0);
}


//  --------------------------------------------------------------------------
//  The output and the end

//  The messages the outcome writes, as SEMANTICS.md section 7 says: the
//  chosen alternative on success; on failure the error object on the last
//  alternative when there are two or more. May turn an ok into an error
//  (a bad branch, type_mismatch, bad_path). NULL when an error message
//  must be appended instead; *branch says which alternative was written.
static json_t *
s_output_messages (s_call_t *call, const char **status, json_t **error,
                   const json_t *result, long long *branch)
{
    act_expr_t *output = call->call->output;
    act_ctx_t *ctx = call->context->ctx;
    json_t *messages = NULL;
    act_err_t err = { 0 };
    if (streq (*status, "ok")) {
        if (*branch < 0 || (size_t) *branch >= output->nalts) {
            char *message = zsys_sprintf ("the worker chose branch %lld; the output path "
                                          "has %zu", *branch, output->nalts);
            *error = s_error_json (ACT_E_ACTIVITY_FAILED, message);
            zstr_free (&message);
        }
        else
            messages = act_ctx_output (ctx, &output->alts [*branch], result, call->call->method,
                                       call->call->instance, NULL, call->id, &err);
        if (!messages && !*error)
            *error = s_error_json (err.code, err.message);
        if (!messages)
            *status = "error";
    }
    if (!streq (*status, "ok") && output->nalts >= 2) {
        *branch = (long long) output->nalts - 1;
        json_t *value = json_pack ("{sO}", "error", *error);
        messages = act_ctx_output (ctx, &output->alts [*branch], value, call->call->method,
                                   call->call->instance, NULL, call->id, &err);
        json_decref (value);
    }
    return messages;
}

//  The stored text of a message of call: the message, then "data" (when
//  data_text is given: the display form, made without serializing the
//  value again), then "_call" with the call's own text (as submitted)
static char *
s_message_text (json_t *message, const char *data_text, const char *call_text)
{
    if (data_text)
        json_object_del (message, "data");
    char *text = act_json_dump (message);
    if (data_text) {
        char *joined = act_text_splice (text, "data", data_text);
        free (text);
        text = joined;
    }
    char *joined = act_text_splice (text, "_call", call_text);
    free (text);
    return joined;
}

//  Write the call's outcome into its context and the store; fill the
//  outcome's branch, written and seqs
static void
s_call_write (act_flow_t *self, s_call_t *call, const char **status, json_t **error,
              const json_t *result, const char *result_text, long long branch,
              json_t *outcome)
{
    act_expr_t *output = call->call->output;
    json_t *messages = s_output_messages (call, status, error, result, &branch);
    json_t *written = json_array ();
    json_t *seqs = json_array ();
    if (messages) {
        json_object_set_new (outcome, "branch", json_integer (branch));
        for (size_t i = 0; i < output->alts [branch].nrefs; i++)
            json_array_append_new (written, json_string (output->alts [branch].refs [i].text));
    }
    else {
        messages = json_array ();
        json_array_append_new (messages,
                               act_ctx_error (call->context->ctx, *error, NULL, call->id));
    }
    //  The worker's result text is the written value: nest it as it is
    bool spliced = result_text && streq (*status, "ok");
    size_t index;
    json_t *message;
    json_array_foreach (messages, index, message) {
        json_int_t seq = json_integer_value (json_object_get (message, "_seq"));
        char *data = spliced? act_text_nest (&output->alts [branch].refs [index], result_text)
                            : NULL;
        char *text = s_message_text (message, data, call->text);
        free (data);
        act_store_put_message (self->store, call->context->id, (uint64_t) seq, text,
                               strlen (text));
        free (text);
        json_array_append_new (seqs, json_integer (seq));
    }
    json_decref (messages);
    json_object_set_new (outcome, "written", written);
    json_object_set_new (outcome, "seqs", seqs);
}

//  The outcome of call as text, for the store and every DONE: status,
//  written messages, the error, the attempts; the worker's result text
//  goes in as it is. Ends the call's writes; may turn ok into error.
static char *
s_call_outcome (act_flow_t *self, s_call_t *call, const char **status, json_t **error,
                const json_t *result, const char *result_text, long long branch)
{
    json_t *outcome = json_pack ("{ss}", "call_id", call->id);
    bool has_output = call->call->output != NULL;
    if (has_output && !streq (*status, "cancelled"))
        s_call_write (self, call, status, error, result, result_text, branch, outcome);
    else
    if (has_output) {
        json_object_set_new (outcome, "written", json_array ());
        json_object_set_new (outcome, "seqs", json_array ());
    }
    json_object_set_new (outcome, "status", json_string (*status));
    if (*error)
        json_object_set (outcome, "error", *error);
    json_object_set_new (outcome, "attempts", json_integer (call->attempts));
    char *text = act_json_dump (outcome);
    json_decref (outcome);
    if (has_output && streq (*status, "ok") && result_text) {
        char *joined = act_text_splice (text, "result", result_text);
        free (text);
        text = joined;
    }
    return text;
}

//  Wake the calls that waited for call in their current round
static void
s_call_wake (act_flow_t *self, s_call_t *call)
{
    for (s_waiter_t *waiter = zlistx_first (call->waiters); waiter;
         waiter = zlistx_next (call->waiters)) {
        s_call_t *other = s_call_lookup (self, waiter->number);
        if (other && other->state == S_WAITING && other->round == waiter->round
        &&  --other->waiting_on == 0)
            s_todo_add (self, other->number);
    }
}

//  End the call with status (for ok: result, and the worker's text of it):
//  write its output, store the outcome, send DONE, wake the calls that
//  waited for it, and forget it. Takes ownership of error.
static void
s_call_finish (act_flow_t *self, s_call_t *call, const char *status, json_t *error,
               const json_t *result, const char *result_text, long long branch)
{
    s_call_enter (self, call, S_ENDED);
    char *outcome = s_call_outcome (self, call, &status, &error, result, result_text, branch);
    char *progress;
    act_call_record_t record = s_record (call, status, outcome, &progress);
    act_store_update_call (self->store, &record);
    free (progress);
    if (call->call->output)
        for (s_recipient_t *to = zlistx_first (call->recipients); to;
             to = zlistx_next (call->recipients)) {
            act_out_t *out = act_outbox_reply (self->outbox, to->client, to->request, "DONE",
                                               true);
            act_out_addstr (out, call->id);
            act_out_addstr (out, outcome);
        }
    free (outcome);
    if (!streq (status, "ok"))
        act_log (LOG_INFO, "call %s (%s) ended %s: %s", call->id, call->activity->name,
                 status, json_string_value (json_object_get (error, "message")));
    json_decref (error);
    s_call_wake (self, call);
    s_call_key (self, call, false);
    call->context->live--;
    call->context->used = act_clock_ms ();
    call->activity->done++;
    zhashx_delete (self->calls, call->id);      //  Destroys the call
}

//  Cancel a live call: a running task gets CANCEL at its worker, whose
//  slot stays taken until it answers
static void
s_call_cancel (act_flow_t *self, s_call_t *call)
{
    if (call->state == S_RUNNING)
        act_out_addstr (act_worker_send (self->outbox, call->worker, "CANCEL"), call->task);
    s_call_finish (self, call, "cancelled",
                   s_error_json (ACT_E_CANCELLED, "cancelled by a client"), NULL, NULL, 0);
}

void
act_flow_settle (act_flow_t *self)
{
    //  First in, first out: calls that become ready together are queued
    //  in the order they were accepted; entries added meanwhile run too
    for (size_t next = 0; next < self->ntodo; next++) {
        s_call_t *call = s_call_lookup (self, self->todo [next]);
        if (!call || call->state != S_WAITING || call->waiting_on)
            continue;
        act_err_t err = { 0 };
        s_eval_t eval = s_evaluate (self, call, &err);
        if (eval == E_READY) {
            s_call_queue (self, call, false);
            if (call->state == S_QUEUED)
                s_call_save (self, call);
        }
        else
        if (eval == E_UNRESOLVED)
            s_call_finish (self, call, "skipped", s_error_json (err.code, err.message),
                           NULL, NULL, 0);
    }
    self->ntodo = 0;
}


//  --------------------------------------------------------------------------
//  Recovery: the calls of a loaded context that had not ended run again

//  The submitter's DONE address from a stored record (hex texts)
static void
s_recover_recipient (s_call_t *call, const json_t *record)
{
    const char *client = json_string_value (json_object_get (record, "client"));
    const char *request = json_string_value (json_object_get (record, "request"));
    if (!client || !request || !call->call->output)
        return;
    zframe_t *frames [2] = { zframe_new (NULL, strlen (client) / 2),
                             zframe_new (NULL, strlen (request) / 2) };
    const char *hex [2] = { client, request };
    for (int f = 0; f < 2; f++)
        for (size_t i = 0; i < zframe_size (frames [f]); i++)
            sscanf (hex [f] + 2 * i, "%2hhx", zframe_data (frames [f]) + i);
    s_recipient_add (call, frames [0], frames [1]);
    zframe_destroy (&frames [0]);
    zframe_destroy (&frames [1]);
}

//  Bring back one stored call that had not ended
static int
s_recover_one (const json_t *record, void *arg)
{
    act_flow_t *self = (act_flow_t *) arg;
    uint64_t number = (uint64_t) json_integer_value (json_object_get (record, "call_id"));
    const char *context_id = json_string_value (json_object_get (record, "context"));
    act_context_t *context = context_id? act_cache_lookup (self->cache, context_id): NULL;
    if (s_call_lookup (self, number) || !context)
        return 0;               //  Live already, or not this context's
    act_err_t err = { 0 };
    s_call_t *call = s_call_new (self, context, json_object_get (record, "call"), NULL, &err);
    if (!call) {
        act_log (LOG_ERR, "stored call %" PRIu64 " cannot be recovered: %s", number,
                 err.message);
        return 0;
    }
    s_call_number (call, number);
    call->attempts = json_integer_value (json_object_get (record, "attempts"));
    json_t *progress = json_object_get (record, "progress");
    call->progress = progress? json_incref (progress): NULL;
    s_recover_recipient (call, record);
    zhashx_insert (self->calls, call->id, call);
    context->live++;
    s_call_key (self, call, true);
    call->producer = act_deps_register (context->deps, call->call->output,
                                        call->call->instance, call->number, call);
    s_call_enter (self, call, S_WAITING);
    //  An attempt that was running when actd stopped counts: with the
    //  attempts used up, the call ends now rather than run once more than
    //  its _retry allows
    const char *state = json_string_value (json_object_get (record, "state"));
    if (state && streq (state, "running") && call->attempts >= call->retry.max_attempts) {
        char *message = zsys_sprintf ("actd stopped during attempt %lld, the last of %lld "
                                      "allowed", call->attempts, call->retry.max_attempts);
        s_call_finish (self, call, "error", s_error_json (ACT_E_WORKER_LOST, message),
                       NULL, NULL, 0);
        zstr_free (&message);
    }
    else
        s_todo_add (self, number);
    return 0;
}

//  The cache's loaded hook: recover the context's calls, oldest first (an
//  older call may produce for a newer one, and both are in the context)
static void
s_recover (void *arg, act_context_t *context)
{
    act_flow_t *self = (act_flow_t *) arg;
    act_store_pending_in (self->store, context->id, s_recover_one, self);
}


//  --------------------------------------------------------------------------
//  STATUS and CANCEL

//  STATUS of a live call. waiting_on is worked out now: the expressions
//  that still wait for a producer
static json_t *
s_status_live (s_call_t *call)
{
    json_t *status = json_pack ("{sssssssI}", "call_id", call->id,
        "context", call->context->id, "state", s_state_names [call->state],
        "attempts", (json_int_t) call->attempts);
    if (call->progress)
        json_object_set (status, "progress", call->progress);
    if (call->state == S_WAITING) {
        json_t *unmet = json_array ();
        zlistx_t *found = zlistx_new ();
        for (size_t i = 0; i < call->call->nrefs; i++)
            if (s_expression (call, call->call->refs [i], found) == X_PENDING)
                json_array_append_new (unmet, json_string (call->call->refs [i]->text));
        zlistx_destroy (&found);
        json_object_set_new (status, "waiting_on", unmet);
    }
    return status;
}

//  STATUS of an ended call, from its record
static json_t *
s_status_record (const char *id, json_t *record)
{
    json_t *status = json_pack ("{sssOsOsO}", "call_id", id,
        "context", json_object_get (record, "context"),
        "state", json_object_get (record, "state"),
        "attempts", json_object_get (record, "attempts"));
    if (json_object_get (record, "outcome"))
        json_object_set (status, "outcome", json_object_get (record, "outcome"));
    if (json_object_get (record, "progress"))
        json_object_set (status, "progress", json_object_get (record, "progress"));
    return status;
}

//  The call named id: live (*call) or ended (*record, the caller's to
//  free). Returns 0, or -1 with err (not_found; moved and internal when
//  its context cannot be loaded here).
static int
s_find (act_flow_t *self, const char *id, s_call_t **call, json_t **record, act_err_t *err)
{
    uint64_t number = 0;
    bool valid = id && act_decimal_parse (id, strlen (id), UINT64_MAX, &number) && number;
    *call = valid? s_call_lookup (self, number): NULL;
    *record = (valid && !*call)? act_store_call (self->store, number): NULL;
    const char *state = json_string_value (json_object_get (*record, "state"));
    if (*record && (act_store_shared (self->store) || !act_state_ended (state))) {
        //  Its context's owner answers for it (shared store); loading the
        //  context here recovers the call if it had not ended
        const char *context = json_string_value (json_object_get (*record, "context"));
        if (!act_cache_get (self->cache, context, false, err)) {
            json_decref (*record);
            *record = NULL;
            return -1;
        }
        if ((*call = s_call_lookup (self, number))) {
            json_decref (*record);
            *record = NULL;
        }
    }
    if (!*call && !*record)
        return act_err_set (err, ACT_E_NOT_FOUND, "no call %.64s", valid? id: "(not a call id)");
    return 0;
}

json_t *
act_flow_status (act_flow_t *self, const char *id, act_err_t *err)
{
    s_call_t *call;
    json_t *record;
    if (s_find (self, id, &call, &record, err))
        return NULL;
    json_t *status = call? s_status_live (call): s_status_record (id, record);
    json_decref (record);
    return status;
}

int
act_flow_cancel (act_flow_t *self, const char *id, act_err_t *err)
{
    s_call_t *call;
    json_t *record;
    if (s_find (self, id, &call, &record, err))
        return -1;
    json_decref (record);
    if (call)
        s_call_cancel (self, call);
    return call != NULL;
}


//  --------------------------------------------------------------------------
//  Timers

void
act_flow_timers (act_flow_t *self, long long now)
{
    act_timer_t timer;
    while (act_timers_pop (self->timers, now, &timer)) {
        s_call_t *call = s_call_lookup (self, timer.id);
        if (!call || call->timer != timer.generation)
            continue;           //  Void: the call moved on
        if (timer.type == T_DEADLINE && call->state == S_RUNNING) {
            act_out_addstr (act_worker_send (self->outbox, call->worker, "CANCEL"), call->task);
            char *message = zsys_sprintf ("attempt %lld ran over its timeout of %lld ms",
                                          call->attempts, call->timeout_ms);
            s_call_attempt_failed (self, call, s_error_json (ACT_E_TIMEOUT, message), true, true);
            zstr_free (&message);
        }
        else
        if (timer.type == T_SCHEDULE && call->state == S_QUEUED && !call->backoff) {
            char *message = zsys_sprintf ("no worker took it within %lld ms",
                                          call->activity->settings->schedule_timeout_ms);
            s_call_finish (self, call, "timeout", s_error_json (ACT_E_NO_WORKER, message),
                           NULL, NULL, 0);
            zstr_free (&message);
        }
        else
        if (timer.type == T_RETRY && call->state == S_QUEUED && call->backoff) {
            s_call_queue (self, call, true);
            s_call_save (self, call);
        }
        act_flow_settle (self);
    }
}

long long
act_flow_next_timer (act_flow_t *self)
{
    return act_timers_next (self->timers);
}


//  --------------------------------------------------------------------------
//  The flow itself

act_flow_t *
act_flow_new (act_settings_t *settings, act_store_t *store, act_cache_t *cache,
              act_pool_t *pool, act_outbox_t *outbox)
{
    act_flow_t *self = (act_flow_t *) calloc (1, sizeof (act_flow_t));
    if (!self)
        return NULL;
    self->settings = settings;
    self->store = store;
    self->cache = cache;
    self->pool = pool;
    self->outbox = outbox;
    self->timers = act_timers_new ();
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, s_call_destructor);
    self->keys = zhashx_new ();
    act_cache_set_loaded (cache, s_recover, self);
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
    self->ntodo = 0;
    memset (self->counts, 0, sizeof self->counts);
    act_pool_forget_calls (self->pool);
}

size_t
act_flow_waiting (act_flow_t *self)
{
    return self->counts [S_WAITING];
}

size_t
act_flow_queued (act_flow_t *self)
{
    return self->counts [S_QUEUED];
}

size_t
act_flow_running (act_flow_t *self)
{
    return self->counts [S_RUNNING];
}

size_t
act_flow_live (act_flow_t *self)
{
    return zhashx_size (self->calls);
}
