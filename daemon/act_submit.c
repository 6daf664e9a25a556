/*  =========================================================================
    act_submit - the first step of a call's path: a CALL or PLAN becomes
    live calls, all or none (see act_flow.h, act_flow_submit).

    Each entry is validated, checked against the calls already accepted
    under its _id, given its place in its activity's backlog and a number,
    evaluated against its context and the earlier calls, and registered as
    a producer; then ACCEPTED goes out, and the calls are accepted (stored
    and made live, all of them) and then started. A refused request keeps
    nothing.
    ========================================================================= */

#include "act_flow_int.h"

//  The call accepted before in context under client key key: a live one
//  (*call), or the record of one that ended (*record). Returns 0 (both
//  NULL when none), or -1 with err (internal) when the store could not
//  tell: a key the store could not be asked about is never taken for new,
//  or the call would run twice.
static int
s_call_by_key (act_flow_t *self, const char *context, const char *key, act_live_t **call,
               json_t **record, act_err_t *err)
{
    *record = NULL;
    char *full = act_key_new (context, key);
    *call = (act_live_t *) zhashx_lookup (self->keys, full);
    free (full);
    uint64_t number = 0;
    int found = *call? 0: act_store_idem (self->store, context, key, &number);
    //  A key stored without its record (the row gone meanwhile) is no
    //  answer either: the key's unique index would refuse a new call
    if (found > 0 && act_store_call (self->store, number, record) < 1)
        found = -1;
    if (found < 0)
        return act_err_set (err, ACT_E_INTERNAL, "the store could not tell whether the "
                            "_id was used in context %s", context);
    return 0;
}

//  Entries a request may have for its arrays to be on the stack
#define S_LOCAL_ENTRIES 4

//  What ACCEPTED says of one entry, and what follows it
typedef struct {
    char id [24];               //  Its call id (a new one, or the earlier
                                //  call's its _id repeats)
    bool live;                  //  Its _id repeats a call not ended
    json_t *record;             //  The record of the ended call its _id
                                //  repeats, owned, or NULL
    bool done;                  //  A repeat with an output path: its
                                //  client waits for the earlier call's DONE
} s_entry_t;

//  An entry whose _id was seen before (in the store, live, or earlier in
//  this plan): what ACCEPTED says of it goes to *entry, and the new call
//  is dropped. Returns 1 then, 0 when the _id is new, or -1 with err and
//  the new call dropped: internal when the store could not tell, busy when
//  the earlier call has ACT_LIVE_MAX_RECIPIENTS waiting for its DONE.
static int
s_prepare_repeat (act_flow_t *self, act_live_t **calls, size_t index, s_entry_t *entry,
                  act_err_t *err)
{
    act_live_t *call = calls [index];
    act_live_t *earlier;
    json_t *record;
    if (s_call_by_key (self, call->context->id, call->call->id, &earlier, &record, err)) {
        act_flow_drop (self, &calls [index]);
        return -1;
    }
    for (size_t i = 0; !earlier && !record && i < index; i++)
        if (calls [i] && calls [i]->call->id && streq (calls [i]->call->id, call->call->id))
            earlier = calls [i];
    if (earlier && earlier->nrecipients >= ACT_LIVE_MAX_RECIPIENTS) {
        //  Each repeat with a new request id waits for the DONE too: bounded
        act_err_set (err, ACT_E_BUSY, "call %s already has %d requests waiting for its DONE",
                     earlier->id, ACT_LIVE_MAX_RECIPIENTS);
        act_flow_drop (self, &calls [index]);
        return -1;
    }
    if (earlier) {
        snprintf (entry->id, sizeof entry->id, "%s", earlier->id);
        entry->live = true;
    }
    else
    if (record) {
        snprintf (entry->id, sizeof entry->id, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (record, "call_id")));
        entry->record = record;
    }
    else
        return 0;
    //  Whether DONE follows is the repeat's to say, not the earlier call's:
    //  its client waits for one when its own call has an output path
    entry->done = call->call->output != NULL;
    act_flow_drop (self, &calls [index]);
    return 1;
}

//  Prepare one new entry: reserve its place, number it, evaluate it and
//  register its outputs. Returns its evaluation, or ACT_LIVE_UNRESOLVED with err
//  (busy, with *limit "max_queue"; internal, unresolved_reference) and the
//  call dropped.
static act_live_eval_t
s_prepare_one (act_flow_t *self, act_live_t **call_p, act_err_t *err, const char **limit)
{
    act_live_t *call = *call_p;
    act_activity_t *activity = call->activity;
    if (activity->backlog >= (size_t) activity->settings->max_queue) {
        act_err_set (err, ACT_E_BUSY, "activity %s has %zu calls waiting (max_queue %lld)",
                     activity->name, activity->backlog, activity->settings->max_queue);
        *limit = "max_queue";
        act_flow_drop (self, call_p);
        return ACT_LIVE_UNRESOLVED;
    }
    act_live_enter (call, ACT_LIVE_NEW, self->counts);
    uint64_t number = act_store_next_call (self->store);
    if (number == 0) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not give out a call id");
        act_flow_drop (self, call_p);
        return ACT_LIVE_UNRESOLVED;
    }
    act_live_number (call, number);
    act_live_eval_t eval = act_live_evaluate (call, err);
    if (eval == ACT_LIVE_UNRESOLVED)
        act_flow_drop (self, call_p);
    else
        call->producer = act_deps_register (call->context->deps, call->call->output,
                                            call->call->instance, call->number, call);
    return eval;
}

//  The call of entry index: a PLAN's entry, made from its tree, or the
//  CALL's, made already (*first, taken; first_err says why it was not)
static act_call_t *
s_make (json_t *entries, size_t index, act_call_t **first, const act_err_t *first_err,
        act_err_t *err)
{
    if (entries)
        return act_call_parse (json_array_get (entries, index), err);
    if (!*first)
        act_err_set (err, first_err->code, "%s", first_err->message);
    act_call_t *call = *first;
    *first = NULL;
    return call;
}

//  True when the ACCEPTED of a plan of count entries fits in
//  max_reply_bytes (PROTOCOL.md section 1: replies are bounded), else
//  false with err (too_large). Its array of ids cannot be paged, and it
//  is not a stored value: a plan of many short calls, each answered with
//  a longer id, could pass the bound by nearly twice its own size.
static bool
s_accepted_fits (act_flow_t *self, const s_entry_t *accepted, size_t count, act_err_t *err)
{
    size_t bytes = 1;                   //  "[", and "]" for the last comma
    for (size_t i = 0; i < count; i++)
        bytes += strlen (accepted [i].id) + 3;
    if (bytes <= (size_t) self->settings->max_reply_bytes)
        return true;
    act_err_set (err, ACT_E_TOO_LARGE, "a plan of %zu calls is answered with %zu bytes of "
                 "call ids, over max_reply_bytes (%lld): send its calls in several plans",
                 count, bytes, self->settings->max_reply_bytes);
    return false;
}

//  Prepare the calls of a CALL (one: *first, or first_err) or PLAN
//  (entries, several), all or none:
//  validated (against their tools too), numbered, evaluated against the
//  context and earlier calls, their place in their activity's backlog
//  reserved. Returns 0 and fills,
//  per entry: calls [i] (a new call, or NULL when the entry repeats an
//  _id) and entries [i] (its id; for a repeated _id, the earlier call live,
//  or the record of an ended one). Or returns -1 with err naming the
//  entry (or too_large: its ACCEPTED would pass max_reply_bytes), keeping
//  nothing, and *limit the setting whose bound refused it busy, if one
//  did. Numbers of refused calls are not reused: a
//  wait they registered on a live call must never match a later call.
static int
s_prepare (act_flow_t *self, act_context_t *context, json_t *entries, act_call_t **first,
           const act_err_t *first_err, act_live_t **calls, act_live_eval_t *evals,
           s_entry_t *accepted, act_err_t *err, const char **limit)
{
    //  The global cap beside each activity's max_queue: many activities,
    //  each under its own limit, must not hold memory without end. Only
    //  new calls count: a repeated _id adds none and is never busy
    size_t count = entries? json_array_size (entries): 1;
    size_t backlog = self->counts [ACT_LIVE_WAITING] + self->counts [ACT_LIVE_QUEUED];
    size_t fresh = 0;
    size_t index;
    for (index = 0; index < count; index++) {
        //  A prescribed output path is added to the call, which is then
        //  stored as changed (PROTOCOL.md section 2.1)
        act_call_t *parsed = s_make (entries, index, first, first_err, err);
        if (!parsed || act_tools_prescribe (self->tools, &parsed, err) < 0) {
            act_call_destroy (&parsed);
            break;
        }
        calls [index] = act_live_new (self->pool, context, parsed);
        int repeat = calls [index]->call->id
                   ? s_prepare_repeat (self, calls, index, &accepted [index], err): 0;
        if (repeat < 0)
            break;
        if (repeat)
            continue;
        if (backlog + ++fresh > (size_t) self->settings->max_queued_calls) {
            act_err_set (err, ACT_E_BUSY, "%zu calls are waiting or queued, and %zu more "
                         "would pass max_queued_calls (%lld)", backlog, fresh,
                         self->settings->max_queued_calls);
            *limit = "max_queued_calls";
            act_flow_drop (self, &calls [index]);
            break;
        }
        if (act_tools_admit (self->tools, calls [index]->call, calls [index]->activity,
                             &calls [index]->tool_checked, err)) {
            //  The one busy of act_tools_admit is its bound
            if (streq (err->code, ACT_E_BUSY))
                *limit = "max_unserved_activities";
            act_flow_drop (self, &calls [index]);
            break;
        }
        evals [index] = s_prepare_one (self, &calls [index], err, limit);
        if (!calls [index])
            break;
        memcpy (accepted [index].id, calls [index]->id, sizeof accepted [index].id);
    }
    if (index == count && (!entries || s_accepted_fits (self, accepted, count, err)))
        return 0;
    if (index < count && entries && count > 1) {
        char *message = strdup (err->message);
        act_err_set (err, err->code, "call %zu: %s", index, message);
        free (message);
    }
    for (size_t i = 0; i < index; i++)
        act_flow_drop (self, &calls [i]);
    return -1;
}

//  The outcome of a call that had already ended (an _id repeated), as DONE
static void
s_done_from_record (act_flow_t *self, json_t *record, zframe_t *client, zframe_t *request)
{
    json_t *call = json_object_get (record, "call");
    json_t *outcome = json_object_get (record, "outcome");
    const char *call_id = json_string_value (json_object_get (outcome, "call_id"));
    if (!call_id) {
        //  A stored row that does not read (the store's data is a file's)
        act_log (LOG_ERR, "store: the outcome of an ended call with _id %s does not read: "
                 "no DONE for its repeat", json_string_value (json_object_get (call, "_id")));
        return;
    }
    act_out_t *out = act_outbox_reply (self->outbox, client, request, "DONE", true);
    act_out_addstr (out, call_id);
    char *text = act_json_dump (outcome);
    act_out_addstr (out, text);
    free (text);
}

//  True when every entry is a new call with an output path (its client
//  waits for their DONEs) of a tool whose attempts lately took hold_us at
//  most: ACCEPTED may then wait a little for the results, to share their
//  commit. A slower tool's ACCEPTED would only wait the whole hold.
static bool
s_patient (act_live_t **calls, size_t count, long long hold_us)
{
    for (size_t i = 0; i < count; i++)
        if (!calls [i] || !calls [i]->call->output || calls [i]->activity->run_us > hold_us)
            return false;
    return true;
}

//  Answer an accepted CALL or PLAN of count entries (calls: the new ones):
//  ACCEPTED, then for each repeated _id with an output path its DONE now
//  (ended) or when it ends (live)
static void
s_accepted (act_flow_t *self, zframe_t *client, zframe_t *request, s_entry_t *entries,
            act_live_t **calls, size_t count, bool plan)
{
    act_out_t *out = act_outbox_reply (self->outbox, client, request, "ACCEPTED", true);
    if (!act_outbox_enveloped (self->outbox, client)
    &&  s_patient (calls, count, self->settings->hold_us))
        act_out_patient (out);
    if (plan) {
        //  The ids are decimal: the array is written as act_json_dump would
        char *text = malloc (count * (sizeof entries->id + 3) + 3);
        char *at = text;
        *at++ = '[';
        for (size_t i = 0; i < count; i++)
            at += sprintf (at, "%s\"%s\"", i? ",": "", entries [i].id);
        strcpy (at, "]");
        act_out_addstr (out, text);
        free (text);
    }
    else
        act_out_addstr (out, entries [0].id);
    if (act_outbox_enveloped (self->outbox, client))
        return;                 //  A REQ socket takes ACCEPTED only
    for (size_t i = 0; i < count; i++) {
        if (!entries [i].done)
            continue;
        if (entries [i].record)
            s_done_from_record (self, entries [i].record, client, request);
        else
        if (entries [i].live) {
            act_live_t *earlier = zhashx_lookup (self->calls, entries [i].id);
            size_t known = earlier? earlier->nrecipients: 0;
            if (earlier)
                act_live_recipient_add (earlier, client, request,
                                        act_outbox_serving_owner (self->outbox));
            //  Stored too (docs/protocol.md 2.4): the DONE still reaches
            //  this request after a restart. The row of calls has the
            //  first submitter's only
            if (earlier && earlier->nrecipients > known) {
                earlier->repeated = true;
                act_live_put_resume (earlier, self->store);
            }
        }
    }
}

//  Make a prepared call live: store it (with the client and request its
//  DONE goes to), index it, and put it in the state eval gives it,
//  waiting or queued. A queued call is not dispatched here (s_start does)
static void
s_accept (act_flow_t *self, act_live_t *call, act_live_eval_t eval, zframe_t *client,
          zframe_t *request)
{
    act_cache_store (self->cache, call->context);
    zhashx_insert (self->calls, call->id, call);
    call->context->live++;
    act_flow_key (self, call, true);
    //  A REQ socket takes one reply per request (ACCEPTED): no DONE for it
    if (act_outbox_enveloped (self->outbox, client))
        client = NULL;
    const char *owner = act_outbox_serving_owner (self->outbox);
    if (call->call->output)
        act_live_recipient_add (call, client, request, owner);
    act_live_put (call, self->store, eval == ACT_LIVE_WAIT? "waiting": "queued",
                  client, request, owner);
    //  Waiting is for dependencies (SEMANTICS.md section 7): a call with
    //  every reference present starts queued, as STATUS then shows it
    if (eval == ACT_LIVE_READY)
        act_flow_enqueue (self, call, false);
    else
        act_flow_enter (self, call, ACT_LIVE_WAITING);
}

//  Accept the new calls of a request (calls, count entries; NULL for a
//  repeated _id), then dispatch the queued ones in order. Every call is
//  live, and waits where it waits, before any is dispatched: a dispatch
//  may end a call at once (its params refused once resolved, or a
//  reference gone), or end an earlier queued call of the same activity,
//  and the end of a producer wakes only the calls it finds waiting
//  (SEMANTICS.md section 7: its readers are then evaluated again). A
//  reader not accepted yet would wait for it for ever.
static void
s_start (act_flow_t *self, act_live_t **calls, const act_live_eval_t *evals,
         const s_entry_t *accepted, size_t count, zframe_t *client, zframe_t *request)
{
    for (size_t i = 0; i < count; i++)
        if (calls [i])
            s_accept (self, calls [i], evals [i], client, request);
    for (size_t i = 0; i < count; i++) {
        //  By its id, not calls [i]: a call ended by an earlier dispatch
        //  is freed. An entry repeating an _id has the earlier call's id
        bool fresh = !accepted [i].live && !accepted [i].record;
        act_live_t *call = fresh && evals [i] == ACT_LIVE_READY
                         ? (act_live_t *) zhashx_lookup (self->calls, accepted [i].id): NULL;
        if (call && call->state == ACT_LIVE_QUEUED && !call->backoff)
            act_flow_dispatch (self, call);
    }
}

void
act_flow_submit (act_flow_t *self, zframe_t *client, zframe_t *request, const char *command,
                 const char *context_id, json_t *entries, const char *call_text,
                 size_t call_size)
{
    //  A CALL is made from its text in one pass. Its JSON is judged first,
    //  as a PLAN's is (by its command); the call itself after the
    //  context, as each of a PLAN's entries
    act_err_t err = { 0 }, first_err = { 0 };
    act_call_t *first = entries? NULL
                      : act_call_new (self->scan, call_text, call_size, &first_err);
    act_context_t *context = NULL;
    if (!entries && !first && first_err.code && streq (first_err.code, ACT_E_BAD_JSON))
        err = first_err;
    else
    if (self->stopping)
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
    else
        context = act_cache_get (self->cache, context_id, true, &err);
    if (!context) {
        act_call_destroy (&first);
        act_outbox_error (self->outbox, client, request, command, &err, NULL);
        return;
    }
    //  A CALL's entry (or a short PLAN's) on the stack, no allocation
    size_t count = entries? json_array_size (entries): 1;
    act_live_t *local_calls [S_LOCAL_ENTRIES] = { NULL };
    act_live_eval_t local_evals [S_LOCAL_ENTRIES] = { ACT_LIVE_READY };
    s_entry_t local_accepted [S_LOCAL_ENTRIES] = { { { 0 }, false, NULL, false } };
    bool local = count <= S_LOCAL_ENTRIES;
    act_live_t **calls = local? local_calls: calloc (count, sizeof (act_live_t *));
    act_live_eval_t *evals = local? local_evals: calloc (count, sizeof (act_live_eval_t));
    s_entry_t *accepted = local? local_accepted: calloc (count, sizeof (s_entry_t));
    const char *limit = NULL;
    if (s_prepare (self, context, entries, &first, &first_err, calls, evals, accepted,
                   &err, &limit)) {
        act_outbox_error (self->outbox, client, request, command, &err, limit);
        act_cache_release (self->cache, context);
        act_pool_prune (self->pool);
    }
    else {
        //  ACCEPTED first: a call may end as it starts (its params refused
        //  at dispatch), and its DONE must come after
        s_accepted (self, client, request, accepted, calls, count, entries != NULL);
        s_start (self, calls, evals, accepted, count, client, request);
    }
    act_call_destroy (&first);
    for (size_t i = 0; i < count; i++)
        json_decref (accepted [i].record);
    if (!local) {
        free (accepted);
        free (calls);
        free (evals);
    }
}
