/*  =========================================================================
    act_http_api - the JSON routes under /v1/ (see act_http_api.h and
    docs/http.md): each turns one HTTP request into ACT/1 requests on the
    request's broker connection and its replies into the HTTP answer.
    ========================================================================= */

#include "act_http_api.h"
#include "act_http_sse.h"
#include "actd/act_json.h"

#define S_WAIT_MS       60000   //  Default timeout_ms of ?wait=1
#define S_WAIT_MAX_MS   3600000 //  Largest timeout_ms of ?wait=1
#define S_CHECK_MS      1000    //  ?wait=1 without _outputPath: STATUS after
                                //  this long without an event on its watch

//  The deadline for a request to actd
static int64_t
s_deadline (act_http_req_t *req)
{
    return zclock_mono () + req->config->request_timeout_ms;
}

//  Send one request, answer its reply (status for a success)
static enum MHD_Result
s_ask (act_http_req_t *req, unsigned status, const char *command, const char *a,
       const char *b, const char *c)
{
    act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                              command, a, b, c, NULL);
    return act_http_req_reply (req, reply, status);
}

//  The body, which must have come whole
static const char *
s_body (act_http_req_t *req)
{
    return req->body? req->body: "";
}

//  The STATUS object in the reply's first arg when it says the call has
//  ended (a new reference), else NULL
static json_t *
s_ended (act_reply_t *reply)
{
    char *text = act_reply_arg (reply, 0);
    json_t *status = text? json_loads (text, 0, NULL): NULL;
    free (text);
    if (act_client_state_ended (json_string_value (json_object_get (status, "state"))))
        return status;
    json_decref (status);
    return NULL;
}

//  Ask STATUS of call_id (waiting until deadline at most): *status is its
//  STATUS object once it has ended. Returns the reply to answer as is (an
//  ERROR: the connection dropped, the call is gone), else NULL.
static act_reply_t *
s_check_status (act_http_req_t *req, const char *call_id, int64_t deadline, json_t **status)
{
    int64_t left = deadline - zclock_mono ();
    int timeout = left < req->config->request_timeout_ms? (int) left
                                                          : req->config->request_timeout_ms;
    act_reply_t *reply = timeout > 0? act_http_broker_ask (req->broker, timeout, "STATUS",
                                                           call_id, NULL): NULL;
    if (reply && streq (reply->verb, "ERROR"))
        return reply;
    if (reply && streq (reply->verb, "VALUE"))
        *status = s_ended (reply);
    act_reply_destroy (&reply);
    return NULL;
}

//  Wait for the end of fire-and-forget call_id, from the call events of
//  watch, and from STATUS after each S_CHECK_MS without an event: actd
//  forgets the watch when actd-http's connection to it drops, and the
//  watch is not sent again (a STATUS sent then finds the call's state once
//  the connection is back, or fails with it: 502). Answers the final
//  STATUS, the error that ended the wait, or 504 at deadline.
static enum MHD_Result
s_wait_status (act_http_req_t *req, act_http_job_t *watch, const char *call_id,
               int64_t deadline)
{
    while (zclock_mono () < deadline && !act_http_broker_stopping (req->broker)) {
        int64_t check = zclock_mono () + S_CHECK_MS;
        act_reply_t *event = act_http_job_reply (watch, check < deadline? check: deadline);
        if (event && !streq (event->verb, "EVENT"))
            return act_http_req_reply (req, event, 500);     //  Refused, or disconnected
        json_t *status = NULL;
        if (!event) {
            act_reply_t *error = s_check_status (req, call_id, deadline, &status);
            if (error)
                return act_http_req_reply (req, error, 500);
        }
        else {
            char *text = act_reply_arg (event, 0);
            act_reply_destroy (&event);
            json_t *value = text? json_loads (text, 0, NULL): NULL;
            free (text);
            json_t *call = json_object_get (value, "call");
            const char *id = json_string_value (json_object_get (call, "call_id"));
            bool deleted = json_is_true (json_object_get (value, "deleted"));
            if (id && streq (id, call_id)
            &&  act_client_state_ended (json_string_value (json_object_get (call, "state"))))
                status = json_incref (call);
            json_decref (value);
            if (deleted && !status)
                return act_http_req_error (req, ACT_E_NOT_FOUND, "the context was deleted");
        }
        if (status)
            return act_http_req_json (req, 200, status);
    }
    return act_http_req_timeout (req, "call %s did not end in time", call_id);
}

//  POST /v1/contexts/{ctx}/calls[?wait=1[&timeout_ms=N]]
static enum MHD_Result
s_calls (act_http_req_t *req, const char *context)
{
    long long wait = act_http_req_number (req, "wait", 0, 0, 1);
    long long timeout = act_http_req_number (req, "timeout_ms", S_WAIT_MS, 1, S_WAIT_MAX_MS);
    if (wait < 0 || timeout < 0)
        return act_http_req_error (req, ACT_E_BAD_ARGUMENT,
                                   "wait is 0 or 1, timeout_ms 1 to %d", S_WAIT_MAX_MS);
    if (!wait) {
        act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                                  "CALL", context, s_body (req), NULL);
        char *call_id = reply && streq (reply->verb, "ACCEPTED")? act_reply_arg (reply, 0): NULL;
        if (!call_id)
            return act_http_req_reply (req, reply, 500);
        act_reply_destroy (&reply);
        json_t *accepted = json_pack ("{ss}", "call_id", call_id);
        free (call_id);
        return act_http_req_json (req, 202, accepted);
    }
    //  Waiting: a call with _outputPath ends with DONE on this request; a
    //  fire-and-forget call is followed on a watch of its context's calls,
    //  opened first (the broker handles one socket's requests in order,
    //  so the watch sees every change after the call is accepted)
    json_t *call = json_loads (s_body (req), 0, NULL);
    bool output = json_object_get (call, "_outputPath") != NULL;
    json_decref (call);
    int64_t deadline = zclock_mono () + timeout;
    act_http_job_t *watch = output? NULL
                          : act_http_broker_send (req->broker, "-", "WATCH", context, "0",
                                                  "all", NULL);
    act_http_job_t *job = act_http_broker_send (req->broker, output? "DONE": NULL, "CALL",
                                                context, s_body (req), NULL);
    enum MHD_Result rc;
    act_reply_t *accepted = act_http_job_reply (job, s_deadline (req));
    if (!accepted || !streq (accepted->verb, "ACCEPTED"))
        rc = act_http_req_reply (req, accepted, 500);
    else {
        char *call_id = act_reply_arg (accepted, 0);
        act_reply_destroy (&accepted);
        if (output) {
            act_reply_t *done = act_http_job_reply (job, deadline);
            char *outcome = done && streq (done->verb, "DONE")? act_reply_arg (done, 1): NULL;
            if (outcome) {
                rc = act_http_req_send (req, 200, "application/json", outcome,
                                        strlen (outcome));
                act_reply_destroy (&done);
            }
            else
            if (done)
                rc = act_http_req_reply (req, done, 500);
            else
                rc = act_http_req_timeout (req, "call %s did not end in time", call_id);
            free (outcome);
        }
        else
            rc = s_wait_status (req, watch, call_id, deadline);
        free (call_id);
    }
    act_http_job_destroy (&job);
    act_http_job_destroy (&watch);
    return rc;
}

//  POST /v1/contexts/{ctx}/plans
static enum MHD_Result
s_plans (act_http_req_t *req, const char *context)
{
    act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                              "PLAN", context, s_body (req), NULL);
    if (!reply || !streq (reply->verb, "ACCEPTED"))
        return act_http_req_reply (req, reply, 500);
    char *ids = act_reply_arg (reply, 0);
    json_t *list = ids? json_loads (ids, 0, NULL): NULL;
    free (ids);
    act_reply_destroy (&reply);
    return act_http_req_json (req, 202, json_pack ("{so}", "call_ids",
                                                   list? list: json_array ()));
}

//  POST /v1/contexts/{ctx}/messages (header Idempotency-Key)
static enum MHD_Result
s_messages (act_http_req_t *req, const char *context)
{
    const char *key = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                   "Idempotency-Key");
    return s_ask (req, 200, "APPEND", context, s_body (req), key && *key? key: NULL);
}

//  GET /v1/contexts/{ctx}/resolve?expr=...[&instance=...]
static enum MHD_Result
s_resolve (act_http_req_t *req, const char *context)
{
    char *expr = act_http_req_arg (req, "expr");
    char *instance = act_http_req_arg (req, "instance");
    enum MHD_Result rc;
    if (!expr)
        rc = act_http_req_error (req, ACT_E_BAD_ARGUMENT, "resolve needs ?expr=");
    else {
        act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                                  "RESOLVE", context, expr, instance, NULL);
        char *value = reply && streq (reply->verb, "VALUE")? act_reply_arg (reply, 0): NULL;
        if (value) {
            char *body = zsys_sprintf ("{\"value\":%s}", value);
            rc = act_http_req_send (req, 200, "application/json", body, strlen (body));
            zstr_free (&body);
            act_reply_destroy (&reply);
        }
        else
            rc = act_http_req_reply (req, reply, 500);
        free (value);
    }
    free (expr);
    free (instance);
    return rc;
}

//  GET /v1/contexts/{ctx}/view[?format=text]
static enum MHD_Result
s_view (act_http_req_t *req, const char *context)
{
    char *format = act_http_req_arg (req, "format");
    bool text = format && streq (format, "text");
    if (format && !text && !streq (format, "json")) {
        free (format);
        return act_http_req_error (req, ACT_E_BAD_ARGUMENT, "format is json or text");
    }
    free (format);
    act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                              "VIEW", context, text? "text": "json", NULL);
    if (!text || !reply || !streq (reply->verb, "VALUE"))
        return act_http_req_reply (req, reply, 200);
    char *body = act_reply_arg (reply, 0);
    enum MHD_Result rc = act_http_req_send (req, 200, "text/plain; charset=utf-8",
                                            body? body: "", body? strlen (body): 0);
    free (body);
    act_reply_destroy (&reply);
    return rc;
}

//  GET /v1/contexts/{ctx}/history?from=1&limit=100
static enum MHD_Result
s_history (act_http_req_t *req, const char *context)
{
    long long from = act_http_req_number (req, "from", 1, 0, INT64_MAX);
    long long limit = act_http_req_number (req, "limit", 100, 1, 1000);
    if (from < 0 || limit < 0)
        return act_http_req_error (req, ACT_E_BAD_ARGUMENT,
                                   "from is a _seq, limit 1 to 1000");
    char from_text [24], limit_text [24];
    snprintf (from_text, sizeof from_text, "%lld", from);
    snprintf (limit_text, sizeof limit_text, "%lld", limit);
    return s_ask (req, 200, "HISTORY", context, from_text, limit_text);
}

//  GET /v1/contexts?prefix=&after=&limit=
static enum MHD_Result
s_contexts (act_http_req_t *req)
{
    long long limit = act_http_req_number (req, "limit", 100, 1, 1000);
    if (limit < 0)
        return act_http_req_error (req, ACT_E_BAD_ARGUMENT, "limit is 1 to 1000");
    char *prefix = act_http_req_arg (req, "prefix");
    char *after = act_http_req_arg (req, "after");
    char limit_text [24];
    snprintf (limit_text, sizeof limit_text, "%lld", limit);
    enum MHD_Result rc = s_ask (req, 200, "CONTEXTS", prefix? prefix: "", after? after: "",
                                limit_text);
    free (prefix);
    free (after);
    return rc;
}

//  True when a POST's body may be read as JSON: its Content-Type is
//  application/json (a charset or other parameter allowed), or it has
//  none and no Origin (a program, such as curl -X POST without -d; a
//  browser's no-cors fetch of a typeless body has an Origin). A form or a
//  text/plain body, which a page of any site can have a browser post
//  without asking (no CORS preflight), is refused.
static bool
s_json_type (act_http_req_t *req)
{
    const char *type = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!type)
        return !MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                             MHD_HTTP_HEADER_ORIGIN);
    size_t length = strcspn (type, ";");
    while (length && (type [length - 1] == ' ' || type [length - 1] == '\t'))
        length--;
    return length == 16 && strncasecmp (type, "application/json", 16) == 0;
}

//  The route action (empty: the context itself) of context, a decoded id
static enum MHD_Result
s_context_action (act_http_req_t *req, const char *context, const char *action)
{
    bool get = act_http_req_get (req), post = streq (req->method, "POST");
    if (!context || !*context)
        return act_http_req_error (req, ACT_E_BAD_CONTEXT, "the context id is badly encoded");
    if (streq (req->method, "DELETE") && !*action)
        return s_ask (req, 200, "DELETE", context, NULL, NULL);
    if (post && streq (action, "calls"))
        return s_calls (req, context);
    if (post && streq (action, "plans"))
        return s_plans (req, context);
    if (post && streq (action, "messages"))
        return s_messages (req, context);
    if (get && streq (action, "resolve"))
        return s_resolve (req, context);
    if (get && streq (action, "view"))
        return s_view (req, context);
    if (get && streq (action, "history"))
        return s_history (req, context);
    if (get && streq (action, "events"))
        return act_http_sse_start (req, context);
    return act_http_req_error (req, ACT_E_NOT_FOUND, "no route %s %s", req->method,
                               req->path);
}

//  Routes under /v1/contexts/{ctx}/ACTION and /v1/contexts/{ctx}
static enum MHD_Result
s_context_route (act_http_req_t *req, const char *rest)
{
    //  The action is the last segment; the context all before it (a
    //  context id may hold "/", sent as is or as %2F)
    const char *slash = strrchr (rest, '/');
    const char *action = slash? slash + 1: "";
    size_t length = slash? (size_t) (slash - rest): strlen (rest);
    if (streq (req->method, "DELETE") || !slash) {
        length = strlen (rest);
        action = "";
    }
    char *context = act_http_req_decode (rest, length);
    enum MHD_Result rc = s_context_action (req, context, action);
    free (context);
    return rc;
}

//  Routes under /v1/context/ACTION?context=ID and /v1/context?context=ID:
//  those of /v1/contexts/{ctx}, the id in the query, where a browser
//  keeps it as it is (it removes "." and ".." segments from a path, even
//  percent-encoded, so that /v1/contexts/../history reaches /v1/history)
static enum MHD_Result
s_context_query_route (act_http_req_t *req, const char *action)
{
    if (strchr (action, '/'))
        return act_http_req_error (req, ACT_E_NOT_FOUND, "no route %s %s", req->method,
                                   req->path);
    char *context = act_http_req_arg (req, "context");
    enum MHD_Result rc = context? s_context_action (req, context, action)
                       : act_http_req_error (req, ACT_E_BAD_CONTEXT,
                                             "%s names its context with ?context=ID",
                                             req->path);
    free (context);
    return rc;
}

//  Routes under /v1/calls/{id}
static enum MHD_Result
s_call_route (act_http_req_t *req, const char *rest)
{
    const char *slash = strchr (rest, '/');
    char *id = act_http_req_decode (rest, slash? (size_t) (slash - rest): strlen (rest));
    enum MHD_Result rc;
    if (!id || !*id)
        rc = act_http_req_error (req, ACT_E_NOT_FOUND, "no such call");
    else
    if (!slash && act_http_req_get (req))
        rc = s_ask (req, 200, "STATUS", id, NULL, NULL);
    else
    if (slash && streq (slash, "/cancel") && streq (req->method, "POST")) {
        act_reply_t *reply = act_http_broker_ask (req->broker,
                                                  req->config->request_timeout_ms,
                                                  "CANCEL", id, NULL);
        if (reply && streq (reply->verb, "OK")) {
            act_reply_destroy (&reply);
            rc = act_http_req_send (req, 200, "application/json", "{}", 2);
        }
        else
            rc = act_http_req_reply (req, reply, 200);
    }
    else
        rc = act_http_req_error (req, ACT_E_NOT_FOUND, "no route %s %s", req->method,
                                 req->path);
    free (id);
    return rc;
}

enum MHD_Result
act_http_api_handle (act_http_req_t *req)
{
    const char *path = req->path;
    bool get = act_http_req_get (req);
    if (req->too_large)
        return act_http_req_error (req, ACT_E_TOO_LARGE,
                                   "the body passes max_body_bytes (%zu bytes)",
                                   req->config->max_body_bytes);
    if (streq (req->method, "POST") && !s_json_type (req))
        return act_http_req_error (req, "unsupported_media_type",
                                   "a POST body is JSON: send Content-Type: application/json");
    if (streq (path, "/v1/contexts") && get)
        return s_contexts (req);
    if (strncmp (path, "/v1/contexts/", 13) == 0)
        return s_context_route (req, path + 13);
    if (streq (path, "/v1/context") || strncmp (path, "/v1/context/", 12) == 0)
        return s_context_query_route (req, path [11]? path + 12: "");
    if (strncmp (path, "/v1/calls/", 10) == 0)
        return s_call_route (req, path + 10);
    if (streq (path, "/v1/stats") && get)
        return s_ask (req, 200, "STATS", NULL, NULL, NULL);
    if (streq (path, "/v1/tools") && get)
        return s_ask (req, 200, "TOOLS", NULL, NULL, NULL);
    return act_http_req_error (req, ACT_E_NOT_FOUND, "no route %s %s", req->method, path);
}
