/*  =========================================================================
    act_flow_calls - the calls by id, live or stored, for STATUS and
    CANCEL, their counts by state, and the end of a context, whose live
    calls are cancelled (see act_flow.h).
    ========================================================================= */

#include "act_flow_int.h"

//  --------------------------------------------------------------------------
//  Calls by id, for STATUS and CANCEL

//  STATUS of an ended call, from its record
static json_t *
s_status_record (const char *id, json_t *record)
{
    json_t *status = json_pack ("{sssOsOsO}", "call_id", id,
        "context", json_object_get (record, "context"),
        "state", json_object_get (record, "state"),
        "attempts", json_object_get (record, "attempts"));
    //  Additive, as act_live_status: the activity and the output path
    json_t *call = json_object_get (record, "call");
    if (json_is_string (json_object_get (call, "_tool")))
        json_object_set (status, "tool", json_object_get (call, "_tool"));
    if (json_is_string (json_object_get (call, "_outputPath")))
        json_object_set (status, "output_path", json_object_get (call, "_outputPath"));
    act_err_t err = { 0 };
    act_call_t *parsed = call? act_call_parse (call, &err): NULL;
    json_t *references = parsed? act_call_references (parsed): NULL;
    if (references)
        json_object_set_new (status, "references", references);
    act_call_destroy (&parsed);
    if (json_object_get (record, "outcome"))
        json_object_set (status, "outcome", json_object_get (record, "outcome"));
    if (json_object_get (record, "progress"))
        json_object_set (status, "progress", json_object_get (record, "progress"));
    return status;
}

//  The call named id: live (*call) or ended (*record, the caller's to
//  free). Returns 0, or -1 with err (not_found; internal when the store
//  could not be read, never taken for not_found, or moved when this
//  broker's lease has lapsed meanwhile; moved and internal when its
//  context cannot be loaded here). A call of a context grant does not
//  reach is not_found, as one that never was: call ids are sequential,
//  and guessing them must reveal nothing about other tenants' calls.
static int
s_find (act_flow_t *self, const act_grant_t *grant, const char *id, act_live_t **call,
        json_t **record, act_err_t *err)
{
    uint64_t number = 0;
    bool valid = id && act_decimal_parse (id, strlen (id), UINT64_MAX, &number) && number;
    *call = valid? act_flow_call (self, number): NULL;
    *record = NULL;
    if (valid && !*call && act_store_call (self->store, number, record) < 0) {
        //  Cut off from a shared store past two thirds of the lease, this
        //  broker has forgotten its calls: the client goes to a live peer,
        //  which reads the call and names its context's owner or takes the
        //  context over, as for the context's own requests
        const char *peer = act_store_elsewhere (self->store, id);
        return peer? act_err_set (err, ACT_E_MOVED, "%s", peer)
                   : act_err_set (err, ACT_E_INTERNAL, "the store could not read call %s", id);
    }
    const char *owner = *call? (*call)->context->id
                      : json_string_value (json_object_get (*record, "context"));
    if (owner && !act_grant_reaches (grant, owner)) {
        *call = NULL;
        json_decref (*record);
        *record = NULL;
    }
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
        if ((*call = act_flow_call (self, number))) {
            json_decref (*record);
            *record = NULL;
        }
    }
    if (!*call && !*record)
        return act_err_set (err, ACT_E_NOT_FOUND, "no call %.64s", valid? id: "(not a call id)");
    return 0;
}

json_t *
act_flow_status (act_flow_t *self, const act_grant_t *grant, const char *id, act_err_t *err)
{
    act_live_t *call;
    json_t *record;
    if (s_find (self, grant, id, &call, &record, err))
        return NULL;
    json_t *status = call? act_live_status (call): s_status_record (id, record);
    json_decref (record);
    //  A stored row without its context, state or attempts does not read
    if (!status)
        act_err_set (err, ACT_E_INTERNAL, "the stored record of call %s does not read", id);
    return status;
}

int
act_flow_cancel_id (act_flow_t *self, const act_grant_t *grant, const char *id, act_err_t *err)
{
    act_live_t *call;
    json_t *record;
    if (s_find (self, grant, id, &call, &record, err))
        return -1;
    json_decref (record);
    if (call)
        act_flow_cancel (self, call);
    return call != NULL;
}

act_tools_t *
act_flow_tools (act_flow_t *self)
{
    return self->tools;
}

act_live_t *
act_flow_call (act_flow_t *self, uint64_t number)
{
    return act_flow_lookup (self, number);
}

json_t *
act_flow_statuses (act_flow_t *self, act_context_t *context)
{
    //  A context knows how many live calls it has, not which: the live
    //  calls are looked through only when it has some
    json_t *statuses = json_array ();
    for (act_live_t *call = context->live? zhashx_first (self->calls): NULL; call;
         call = zhashx_next (self->calls))
        if (call->context == context)
            json_array_append_new (statuses, act_live_status (call));
    return statuses;
}

//  --------------------------------------------------------------------------
//  The end of a context

json_t *
act_flow_delete (act_flow_t *self, const char *context_id, act_err_t *err)
{
    //  Loading it recovers its calls that had not ended, to cancel them
    act_context_t *context = act_cache_get (self->cache, context_id, false, err);
    if (!context)
        return NULL;
    zlistx_t *doomed = zlistx_new ();
    for (act_live_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls))
        if (call->context == context)
            zlistx_add_end (doomed, call);
    size_t cancelled = zlistx_size (doomed);
    for (act_live_t *call = zlistx_first (doomed); call; call = zlistx_next (doomed))
        act_flow_cancel (self, call);
    zlistx_destroy (&doomed);
    size_t messages = 0;
    if (act_store_delete_context (self->store, context_id, &messages)) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not delete context %s", context_id);
        return NULL;            //  The batch is doomed: the commit refuses
    }
    act_cache_forget (self->cache, context_id);
    act_watches_deleted (self->watches, context_id);
    act_log (LOG_INFO, "context %s deleted: %zu messages, %zu calls cancelled", context_id,
             messages, cancelled);
    return json_pack ("{sIsI}", "messages", (json_int_t) messages,
                      "cancelled", (json_int_t) cancelled);
}


//  --------------------------------------------------------------------------
//  Counts of the live calls, by state

size_t
act_flow_waiting (act_flow_t *self)
{
    return self->counts [ACT_LIVE_WAITING];
}

size_t
act_flow_queued (act_flow_t *self)
{
    return self->counts [ACT_LIVE_QUEUED];
}

size_t
act_flow_running (act_flow_t *self)
{
    return self->counts [ACT_LIVE_RUNNING];
}

size_t
act_flow_live (act_flow_t *self)
{
    return zhashx_size (self->calls);
}
