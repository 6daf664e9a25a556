/*  =========================================================================
    act_client - a C client of actd.
    ========================================================================= */

#include "actd/act_client.h"
#include "actd/act_json.h"

struct _act_client_t {
    zsock_t *socket;            //  DEALER to the broker
    zlistx_t *kept;             //  act_reply_t received but not yet taken
    int timeout;                //  Milliseconds a synchronous request waits
    uint64_t sequence;          //  Makes request ids
    char *endpoint;             //  Where it connects
};

static void
s_reply_free (void **item)
{
    act_reply_destroy ((act_reply_t **) item);
}

act_client_t *
act_client_new (const char *endpoint)
{
    act_client_t *self = calloc (1, sizeof *self);
    self->socket = zsock_new (ZMQ_DEALER);
    if (!self->socket) {
        free (self);
        return NULL;
    }
    zsock_set_linger (self->socket, 0);
    self->endpoint = strdup (endpoint? endpoint: ACT_CLIENT_ENDPOINT);
    if (zsock_connect (self->socket, "%s", self->endpoint)) {
        act_client_destroy (&self);
        return NULL;
    }
    self->kept = zlistx_new ();
    zlistx_set_destructor (self->kept, s_reply_free);
    self->timeout = 30000;
    return self;
}

void
act_client_destroy (act_client_t **self_p)
{
    if (self_p && *self_p) {
        act_client_t *self = *self_p;
        zsock_destroy (&self->socket);
        zlistx_destroy (&self->kept);
        free (self->endpoint);
        free (self);
        *self_p = NULL;
    }
}

void
act_client_set_timeout (act_client_t *self, int timeout_ms)
{
    self->timeout = timeout_ms;
}

int
act_client_set_curve (act_client_t *self, const char *server_public,
                      const char *certificate_file)
{
    zcert_t *cert = zcert_load (certificate_file);
    if (!cert)
        return -1;
    //  The socket connected already; CURVE must be set before connecting
    zsock_disconnect (self->socket, "%s", self->endpoint);
    zcert_apply (cert, self->socket);
    zsock_set_curve_serverkey (self->socket, server_public);
    zcert_destroy (&cert);
    return zsock_connect (self->socket, "%s", self->endpoint);
}

void
act_reply_destroy (act_reply_t **self_p)
{
    if (self_p && *self_p) {
        act_reply_t *self = *self_p;
        free (self->verb);
        free (self->request);
        zmsg_destroy (&self->args);
        free (self);
        *self_p = NULL;
    }
}

char *
act_reply_arg (act_reply_t *self, size_t index)
{
    zframe_t *frame = zmsg_first (self->args);
    while (frame && index--)
        frame = zmsg_next (self->args);
    return frame? zframe_strdup (frame): NULL;
}

int
act_client_send (act_client_t *self, char *request, const char *command, ...)
{
    snprintf (request, 24, "c%" PRIu64, ++self->sequence);
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "ACTC01");
    zmsg_addstr (msg, command);
    zmsg_addstr (msg, request);
    va_list args;
    va_start (args, command);
    for (const char *arg = va_arg (args, const char *); arg; arg = va_arg (args, const char *))
        zmsg_addstr (msg, arg);
    va_end (args);
    int rc = zmsg_send (&msg, self->socket);
    zmsg_destroy (&msg);
    return rc;
}

//  Read one reply from the socket, waiting up to timeout_ms
static act_reply_t *
s_read (act_client_t *self, int timeout_ms)
{
    zsock_set_rcvtimeo (self->socket, timeout_ms);
    while (true) {
        zmsg_t *msg = zmsg_recv (self->socket);
        if (!msg)
            return NULL;
        zframe_t *header = zmsg_pop (msg);
        zframe_t *verb = zmsg_pop (msg);
        zframe_t *request = zmsg_pop (msg);
        act_reply_t *reply = NULL;
        if (header && verb && request && zframe_streq (header, "ACTC01")) {
            reply = calloc (1, sizeof *reply);
            reply->verb = zframe_strdup (verb);
            reply->request = zframe_strdup (request);
            reply->args = msg;
            msg = NULL;
        }
        zframe_destroy (&header);
        zframe_destroy (&verb);
        zframe_destroy (&request);
        zmsg_destroy (&msg);
        if (reply)
            return reply;
    }
}

act_reply_t *
act_client_recv (act_client_t *self, int timeout_ms)
{
    act_reply_t *reply = zlistx_first (self->kept);
    if (reply) {
        zlistx_detach_cur (self->kept);
        return reply;
    }
    return s_read (self, timeout_ms);
}

act_reply_t *
act_client_wait (act_client_t *self, const char *request, const char *verb)
{
    for (act_reply_t *reply = zlistx_first (self->kept); reply;
         reply = zlistx_next (self->kept))
        if (streq (reply->request, request) && (!verb || streq (reply->verb, verb))) {
            zlistx_detach_cur (self->kept);
            return reply;
        }
    int64_t deadline = zclock_mono () + self->timeout;
    while (true) {
        int64_t left = deadline - zclock_mono ();
        act_reply_t *reply = left > 0? s_read (self, (int) left): NULL;
        if (!reply)
            return NULL;
        if (streq (reply->request, request) && (!verb || streq (reply->verb, verb)))
            return reply;
        zlistx_add_end (self->kept, reply);
    }
}

//  The library's constant for an error code a broker sent, so err->code
//  stays valid after the reply is gone
static const char *
s_code (const char *code)
{
    static const char *codes [] = {
        ACT_E_BAD_FRAME, ACT_E_UNKNOWN_COMMAND, ACT_E_BAD_JSON, ACT_E_BAD_CONTEXT,
        ACT_E_BAD_CALL, ACT_E_BAD_REFERENCE, ACT_E_BAD_METHOD, ACT_E_BAD_ARGUMENT,
        ACT_E_TYPE_MISMATCH, ACT_E_UNRESOLVED_REFERENCE, ACT_E_NOT_FOUND,
        ACT_E_TOO_LARGE, ACT_E_BUSY, ACT_E_UNAUTHORIZED, ACT_E_INTERNAL, ACT_E_MOVED
    };
    for (size_t i = 0; code && i < sizeof codes / sizeof codes [0]; i++)
        if (streq (code, codes [i]))
            return codes [i];
    return ACT_E_INTERNAL;
}

//  The reply's verb must be expected; an ERROR or a timeout sets err
static int
s_check (act_reply_t *reply, const char *expected, act_err_t *err)
{
    if (!reply)
        return act_err_set (err, "timeout", "no reply from the broker in time");
    if (streq (reply->verb, "ERROR")) {
        char *code = act_reply_arg (reply, 0);
        char *message = act_reply_arg (reply, 1);
        const char *known = s_code (code);
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
    if (s_check (reply, expected, err) == 0) {
        if (json) {
            char *text = act_reply_arg (reply, 0);
            value = text? act_json_parse (text, strlen (text), err): NULL;
            free (text);
        }
        else
            value = json_true ();
    }
    act_reply_destroy (&reply);
    return value;
}

//  Wait for the DONE of request; a new outcome, or NULL with err set
static json_t *
s_done (act_client_t *self, const char *request, act_err_t *err)
{
    act_reply_t *reply = act_client_wait (self, request, "DONE");
    json_t *outcome = NULL;
    if (s_check (reply, "DONE", err) == 0) {
        char *text = act_reply_arg (reply, 1);
        outcome = text? act_json_parse (text, strlen (text), err): NULL;
        free (text);
    }
    act_reply_destroy (&reply);
    return outcome;
}

int
act_client_call (act_client_t *self, const char *context, const char *call,
                 bool wait, char **call_id, json_t **outcome, act_err_t *err)
{
    char request [24];
    if (outcome)
        *outcome = NULL;
    if (act_client_send (self, request, "CALL", context, call, NULL))
        return act_err_set (err, "internal", "cannot send to the broker");
    act_reply_t *reply = act_client_wait (self, request, NULL);
    int rc = s_check (reply, "ACCEPTED", err);
    char *id = rc == 0? act_reply_arg (reply, 0): NULL;
    act_reply_destroy (&reply);
    if (rc)
        return -1;
    json_t *parsed = json_loads (call, 0, NULL);
    bool has_output = json_object_get (parsed, "_outputPath") != NULL;
    json_decref (parsed);
    if (wait && has_output && outcome) {
        *outcome = s_done (self, request, err);
        if (!*outcome)
            rc = -1;
    }
    if (call_id)
        *call_id = id;
    else
        free (id);
    return rc;
}

int
act_client_plan (act_client_t *self, const char *context, const char *calls,
                 bool wait, json_t **ids, json_t **outcomes, act_err_t *err)
{
    char request [24];
    *ids = NULL;
    if (outcomes)
        *outcomes = NULL;
    if (act_client_send (self, request, "PLAN", context, calls, NULL))
        return act_err_set (err, "internal", "cannot send to the broker");
    act_reply_t *reply = act_client_wait (self, request, NULL);
    int rc = s_check (reply, "ACCEPTED", err);
    if (rc == 0) {
        char *text = act_reply_arg (reply, 0);
        *ids = text? json_loads (text, 0, NULL): NULL;
        free (text);
    }
    act_reply_destroy (&reply);
    if (rc || !wait || !outcomes)
        return rc;
    //  One DONE per call with an output path
    json_t *entries = json_loads (calls, 0, NULL);
    *outcomes = json_object ();
    size_t index;
    json_t *entry;
    json_array_foreach (entries, index, entry) {
        if (!json_object_get (entry, "_outputPath"))
            continue;
        json_t *outcome = s_done (self, request, err);
        if (!outcome) {
            rc = -1;
            break;
        }
        json_object_set_new (*outcomes, json_string_value (json_object_get (outcome, "call_id")),
                             outcome);
    }
    json_decref (entries);
    return rc;
}

int
act_client_append (act_client_t *self, const char *context, const char *message,
                   uint64_t *seq, act_err_t *err)
{
    json_t *reply = s_request (self, "OK", true, err, "APPEND", context, message, NULL);
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
    char *text = s_check (reply, "VALUE", err) == 0? act_reply_arg (reply, 0): NULL;
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

int
act_client_ping (act_client_t *self, act_err_t *err)
{
    json_t *pong = s_request (self, "PONG", false, err, "PING", NULL, NULL, NULL);
    json_decref (pong);
    return pong? 0: -1;
}
