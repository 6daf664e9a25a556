/*  =========================================================================
    act_flow_calls - the live calls by id, for STATUS and CANCEL, their
    counts by state, and the end of a context, whose live calls are
    cancelled (see act_flow.h).
    ========================================================================= */

#include "act_flow_int.h"

//  --------------------------------------------------------------------------
//  Calls by id, for STATUS and CANCEL

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
