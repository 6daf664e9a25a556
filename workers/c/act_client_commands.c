/*  =========================================================================
    act_client_commands - the client's commands, each one request sent and
    its reply waited for (see act_client.h). The connection, routing and
    replies are act_client.c's.
    ========================================================================= */

#include "actd/act_json.h"
#include "actd/act_wire.h"
#include "act_client_int.h"

//  The library's constant for an error code a broker sent, so err->code
//  stays valid after the reply is gone
static const char *
s_code (const char *code)
{
    static const char *codes [] = {
        ACT_E_BAD_FRAME, ACT_E_UNKNOWN_COMMAND, ACT_E_BAD_JSON, ACT_E_BAD_CONTEXT,
        ACT_E_BAD_CALL, ACT_E_BAD_REFERENCE, ACT_E_BAD_METHOD, ACT_E_BAD_ARGUMENT,
        ACT_E_TYPE_MISMATCH, ACT_E_UNRESOLVED_REFERENCE, ACT_E_NOT_FOUND,
        ACT_E_TOO_LARGE, ACT_E_BUSY, ACT_E_UNAUTHORIZED, ACT_E_UNKNOWN_ACTIVITY,
        ACT_E_INTERNAL, ACT_E_MOVED, ACT_CLIENT_DISCONNECTED, ACT_CLIENT_UNREACHABLE
    };
    for (size_t i = 0; code && i < sizeof codes / sizeof codes [0]; i++)
        if (streq (code, codes [i]))
            return codes [i];
    return ACT_E_INTERNAL;
}

//  The reply's verb must be expected; an ERROR or a timeout sets err
int
act_client_check (act_reply_t *reply, const char *expected, act_err_t *err)
{
    if (!reply)
        return act_err_set (err, "timeout", "no reply from the broker in time");
    if (streq (reply->verb, "ERROR")) {
        char *code = act_reply_arg (reply, 0);
        char *message = act_reply_arg (reply, 1);
        const char *known = s_code (code);
        //  A moved that names no broker (a broker cut off from its store
        //  that knows no other, docs/protocol.md section 12): say so
        if (code && streq (code, "moved") && (!message || !*message)) {
            free (message);
            message = strdup (ACT_CLIENT_MOVED_NOWHERE);
        }
        if (code && !streq (known, code))
            act_err_set (err, known, "%s: %s", code, message? message: "");
        else
            act_err_set (err, known, "%s", message? message: "");
        free (code);
        free (message);
        return -1;
    }
    if (!streq (reply->verb, expected))
        return act_err_set (err, ACT_E_INTERNAL, "unexpected reply %s", reply->verb);
    return 0;
}

//  Forget a request whose wait timed out: nothing of it is kept or
//  returned any more
void
act_client_forget (act_client_t *self, const char *request)
{
    act_reply_t *reply = zlistx_first (self->kept);
    while (reply)
        if (streq (reply->request, request)) {
            zlistx_delete (self->kept, zlistx_cursor (self->kept));
            reply = zlistx_first (self->kept);
        }
        else
            reply = zlistx_next (self->kept);
    act_awaiting_t *due = zhashx_lookup (self->awaiting, request);
    if (zhashx_lookup (self->pending, request))
        act_client_give_up (self, request);
    else
    if (due)
        act_client_ignore_dones (self, request, due->link, due->dones);
}

//  Send a request and wait for its reply, parsing frame 0 as JSON when
//  json is set. Returns the JSON (or json_true for replies without one).
static json_t *
s_request (act_client_t *self, const char *expected, bool json, act_err_t *err,
           const char *command, const char *a, const char *b, const char *c)
{
    char request [24];
    if (act_client_send (self, request, command, a, b, c, NULL)) {
        act_err_set (err, "internal", "cannot send to the broker");
        return NULL;
    }
    act_reply_t *reply = act_client_wait (self, request, NULL);
    json_t *value = NULL;
    if (act_client_check (reply, expected, err) == 0) {
        if (json) {
            char *text = act_reply_arg (reply, 0);
            value = text? act_json_parse_reply (text, strlen (text), err): NULL;
            if (!text)
                act_err_set (err, ACT_E_INTERNAL, "%s reply without its frame", expected);
            free (text);
        }
        else
            value = json_true ();
    }
    act_reply_destroy (&reply);
    return value;
}

//  The output path activity's tool prescribes (TOOLS' outputPath.const),
//  or NULL: from the answer kept for ACT_CLIENT_PRESCRIBED_MS, else from a
//  TOOLS request (a broker without TOOLS, or that refuses this client TOOLS:
//  no read right, prescribes nothing). Returns -1 with err set when TOOLS
//  fails otherwise.
static int
s_prescribed (act_client_t *self, const char *activity, const char **path, act_err_t *err)
{
    json_t *known = json_object_get (self->prescribed, activity);
    if (!known || json_integer_value (json_array_get (known, 0)) <= zclock_mono ()) {
        act_err_t why = { NULL, "" };
        json_t *answer = act_client_tools (self, activity, &why);
        const char *code = why.code? why.code: "";
        if (!answer && !streq (code, ACT_E_UNKNOWN_COMMAND) && !streq (code, ACT_E_UNAUTHORIZED)) {
            if (err)
                *err = why;
            return -1;
        }
        json_t *declared = json_object_get (json_object_get (answer, activity), "outputPath");
        json_t *prescribed = json_object_get (declared, "const");
        known = json_pack ("[IO]", (json_int_t) (zclock_mono () + ACT_CLIENT_PRESCRIBED_MS),
                           json_is_string (prescribed)? prescribed: json_null ());
        json_object_set_new (self->prescribed, activity, known);
        json_decref (answer);
    }
    *path = json_string_value (json_array_get (known, 1));
    return 0;
}

//  Give call (a JSON object) its tool's prescribed _outputPath when it has
//  none and the tool prescribes one; *changed is set when it was given.
//  Returns -1 with err set when TOOLS fails.
static int
s_prescribe (act_client_t *self, json_t *call, bool *changed, act_err_t *err)
{
    const char *activity = json_string_value (json_object_get (call, "_tool"));
    if (!json_is_object (call) || json_object_get (call, "_outputPath") || !activity)
        return 0;
    const char *path = NULL;
    if (s_prescribed (self, activity, &path, err))
        return -1;
    if (path) {
        json_object_set_new (call, "_outputPath", json_string (path));
        *changed = true;
    }
    return 0;
}

//  Several brokers: a request sent again to another broker (the first did
//  not answer) must not run its call twice, so a call without an _id gets
//  a random one, which makes the retry the same call (docs/protocol.md
//  section 12); sets *changed when it did
static void
s_give_id (act_client_t *self, json_t *call, bool *changed)
{
    if (json_is_object (call) && zlistx_size (self->links) > 1
    &&  !json_object_get (call, "_id")) {
        zuuid_t *uuid = zuuid_new ();
        json_object_set_new (call, "_id", json_string (zuuid_str_canonical (uuid)));
        zuuid_destroy (&uuid);
        *changed = true;
    }
}

void
act_client_id_moved (const char *command, zmsg_t *args)
{
    if (streq (command, "APPEND") && zmsg_size (args) == 2) {
        zuuid_t *uuid = zuuid_new ();
        zmsg_addstr (args, zuuid_str_canonical (uuid));
        zuuid_destroy (&uuid);
    }
    if (!streq (command, "CALL"))
        return;
    zframe_t *context = zmsg_first (args);
    zframe_t *frame = context? zmsg_next (args): NULL;
    json_t *call = frame? act_json_parse ((const char *) zframe_data (frame),
                                          zframe_size (frame), NULL): NULL;
    if (json_is_object (call) && !json_object_get (call, "_id")) {
        zuuid_t *uuid = zuuid_new ();
        json_object_set_new (call, "_id", json_string (zuuid_str_canonical (uuid)));
        zuuid_destroy (&uuid);
        char *text = act_json_dump (call);
        if (text)
            zframe_reset (frame, text, strlen (text));
        free (text);
    }
    json_decref (call);
}

int
act_client_call (act_client_t *self, const char *context, const char *call,
                 bool wait, char **call_id, json_t **outcome, act_err_t *err)
{
    if (outcome)
        *outcome = NULL;
    if (call_id)
        *call_id = NULL;
    json_t *parsed = call? act_json_parse (call, strlen (call), NULL): NULL;
    bool changed = false;
    //  With wait, a call without _outputPath gets its tool's prescribed one
    if (wait && outcome && s_prescribe (self, parsed, &changed, err)) {
        json_decref (parsed);
        return -1;
    }
    bool has_output = json_object_get (parsed, "_outputPath") != NULL;
    s_give_id (self, parsed, &changed);
    char *text = changed? act_json_dump (parsed): NULL;
    json_decref (parsed);
    char request [24];
    int rc = act_client_send (self, request, "CALL", context, text? text: call, NULL);
    free (text);
    if (rc)
        return act_err_set (err, "internal", "cannot send to the broker");
    act_reply_t *reply = act_client_wait (self, request, NULL);
    rc = act_client_check (reply, "ACCEPTED", err);
    char *id = rc == 0? act_reply_arg (reply, 0): NULL;
    if (rc == 0 && (!id || !*id)) {
        rc = act_err_set (err, ACT_E_BAD_FRAME, "ACCEPTED reply without its call id");
        zstr_free (&id);
    }
    act_reply_destroy (&reply);
    //  Its DONE is awaited here, across a dropped connection (a watch), or
    //  by nobody: then dropped as it comes, not kept for act_client_recv
    act_awaiting_t *due = zhashx_lookup (self->awaiting, request);
    act_link_t *accepted_on = due? due->link: NULL;
    zhashx_delete (self->awaiting, request);
    if (rc)
        return -1;
    if (!(wait && has_output && outcome))
        act_client_ignore_dones (self, request, accepted_on, has_output? 1: 0);
    else {
        json_t *ids = json_pack ("[s]", id);
        json_t *outcomes = json_object ();
        rc = act_client_outcomes (self, request, context, ids, outcomes, err);
        if (rc == 0)
            *outcome = json_incref (json_object_get (outcomes, id));
        json_decref (ids);
        json_decref (outcomes);
    }
    if (call_id)
        *call_id = id;
    else
        free (id);
    return rc;
}

//  A PLAN accepted (ids) that nobody waits for: the DONEs of its calls
//  with _outputPath are dropped as they come, not kept for act_client_recv
static void
s_plan_unwaited (act_client_t *self, const char *request, const char *calls, json_t *ids)
{
    json_t *entries = calls? json_loads (calls, 0, NULL): NULL;
    size_t dones = 0, index;
    json_t *entry;
    json_array_foreach (entries, index, entry)
        dones += json_object_get (entry, "_outputPath") != NULL;
    json_decref (entries);
    const char *first = json_string_value (json_array_get (ids, 0));
    act_link_t *link = first? act_table_lookup (self->accepted, first): NULL;
    act_client_ignore_dones (self, request, link, dones);
}

int
act_client_plan (act_client_t *self, const char *context, const char *calls,
                 bool wait, json_t **ids, json_t **outcomes, act_err_t *err)
{
    char request [24];
    *ids = NULL;
    if (outcomes)
        *outcomes = NULL;
    //  With wait, each call without _outputPath gets its tool's prescribed
    //  one; with several brokers, each call without an _id gets one
    bool waits = wait && outcomes;
    json_t *entries = (waits || zlistx_size (self->links) > 1) && calls
                    ? act_json_parse (calls, strlen (calls), NULL): NULL;
    bool changed = false;
    size_t index;
    json_t *entry;
    json_array_foreach (entries, index, entry) {
        if (waits && s_prescribe (self, entry, &changed, err)) {
            json_decref (entries);
            return -1;
        }
        s_give_id (self, entry, &changed);
    }
    char *text = changed? act_json_dump (entries): NULL;
    int sent = act_client_send (self, request, "PLAN", context, text? text: calls, NULL);
    free (text);
    if (sent) {
        json_decref (entries);
        return act_err_set (err, "internal", "cannot send to the broker");
    }
    act_reply_t *reply = act_client_wait (self, request, NULL);
    int rc = act_client_check (reply, "ACCEPTED", err);
    if (rc == 0) {
        char *text = act_reply_arg (reply, 0);
        *ids = text? json_loads (text, 0, NULL): NULL;
        free (text);
        if (!json_is_array (*ids)) {
            rc = act_err_set (err, ACT_E_BAD_FRAME, "ACCEPTED reply without its call ids");
            json_decref (*ids);
            *ids = NULL;
        }
    }
    act_reply_destroy (&reply);
    if (rc == 0 && !waits)
        s_plan_unwaited (self, request, calls, *ids);
    if (rc || !waits) {
        json_decref (entries);
        return rc;
    }
    //  One DONE per call with an output path
    json_t *waited = json_array ();
    json_array_foreach (entries, index, entry)
        if (json_object_get (entry, "_outputPath") && json_array_get (*ids, index))
            json_array_append (waited, json_array_get (*ids, index));
    *outcomes = json_object ();
    rc = act_client_outcomes (self, request, context, waited, *outcomes, err);
    json_decref (waited);
    json_decref (entries);
    return rc;
}

int
act_client_append (act_client_t *self, const char *context, const char *message,
                   uint64_t *seq, act_err_t *err)
{
    return act_client_append_key (self, context, message, NULL, seq, err);
}

//  Without a key, with several brokers, the APPEND gets a random one
//  (act_client.c's s_post)
int
act_client_append_key (act_client_t *self, const char *context, const char *message,
                       const char *key, uint64_t *seq, act_err_t *err)
{
    json_t *reply = s_request (self, "OK", true, err, "APPEND", context, message, key);
    if (!reply)
        return -1;
    if (seq)
        *seq = (uint64_t) json_integer_value (json_object_get (reply, "seq"));
    json_decref (reply);
    return 0;
}

json_t *
act_client_resolve (act_client_t *self, const char *context, const char *expression,
                    const char *instance, act_err_t *err)
{
    return s_request (self, "VALUE", true, err, "RESOLVE", context, expression, instance);
}

json_t *
act_client_view (act_client_t *self, const char *context, act_err_t *err)
{
    return s_request (self, "VALUE", true, err, "VIEW", context, "json", NULL);
}

char *
act_client_view_text (act_client_t *self, const char *context, act_err_t *err)
{
    char request [24];
    if (act_client_send (self, request, "VIEW", context, "text", NULL)) {
        act_err_set (err, "internal", "cannot send to the broker");
        return NULL;
    }
    act_reply_t *reply = act_client_wait (self, request, NULL);
    char *text = act_client_check (reply, "VALUE", err) == 0? act_reply_arg (reply, 0): NULL;
    if (reply && !text && streq (reply->verb, "VALUE"))
        act_err_set (err, ACT_E_BAD_FRAME, "VALUE reply without its frame");
    act_reply_destroy (&reply);
    return text;
}

json_t *
act_client_history (act_client_t *self, const char *context, uint64_t from,
                    size_t limit, act_err_t *err)
{
    char from_text [24], limit_text [24];
    snprintf (from_text, sizeof from_text, "%" PRIu64, from);
    snprintf (limit_text, sizeof limit_text, "%zu", limit);
    return s_request (self, "VALUE", true, err, "HISTORY", context, from_text, limit_text);
}

json_t *
act_client_status (act_client_t *self, const char *call_id, act_err_t *err)
{
    return s_request (self, "VALUE", true, err, "STATUS", call_id, NULL, NULL);
}

int
act_client_cancel (act_client_t *self, const char *call_id, act_err_t *err)
{
    json_t *ok = s_request (self, "OK", false, err, "CANCEL", call_id, NULL, NULL);
    json_decref (ok);
    return ok? 0: -1;
}

json_t *
act_client_stats (act_client_t *self, act_err_t *err)
{
    return s_request (self, "VALUE", true, err, "STATS", NULL, NULL, NULL);
}

json_t *
act_client_tools (act_client_t *self, const char *activity, act_err_t *err)
{
    return s_request (self, "VALUE", true, err, "TOOLS", activity, NULL, NULL);
}

int
act_client_ping (act_client_t *self, act_err_t *err)
{
    json_t *pong = s_request (self, "PONG", false, err, "PING", NULL, NULL, NULL);
    json_decref (pong);
    return pong? 0: -1;
}

json_t *
act_client_contexts (act_client_t *self, const char *prefix, const char *after,
                     size_t limit, act_err_t *err)
{
    //  The arguments are positional: an empty one stands for one not
    //  given before one that is, and those not given at the end are left out
    char limit_text [24] = "";
    if (limit)
        snprintf (limit_text, sizeof limit_text, "%zu", limit);
    const char *args [3] = { prefix? prefix: "", after? after: "", limit_text };
    for (int last = 2; last >= 0 && !*args [last]; last--)
        args [last] = NULL;
    return s_request (self, "VALUE", true, err, "CONTEXTS", args [0],
                      args [0]? args [1]: NULL, args [0] && args [1]? args [2]: NULL);
}

int
act_client_delete (act_client_t *self, const char *context, json_t **counts,
                   act_err_t *err)
{
    json_t *reply = s_request (self, "OK", true, err, "DELETE", context, NULL, NULL);
    if (counts)
        *counts = json_incref (reply);
    json_decref (reply);
    return reply? 0: -1;
}
