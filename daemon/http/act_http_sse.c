/*  =========================================================================
    act_http_sse - Server-Sent Events of a WATCH (see act_http_sse.h).

    libmicrohttpd runs one thread per connection here, so the stream's
    content reader may block: it waits on its watch job for the next event
    up to the keepalive interval, writes it, and returns. A client that
    went away is noticed at the next write (at the latest the keepalive),
    and the free callback closes the watch (UNWATCH).
    ========================================================================= */

#include "act_http_sse.h"
#include "actd/act_json.h"

typedef struct {
    act_http_job_t *job;        //  The watch
    char *pending;              //  Text to write, or NULL
    size_t length;              //  Its length
    size_t written;             //  How much of it went out
    bool last;                  //  After pending, the stream ends
    bool finished;              //  Nothing more to write
} s_stream_t;

//  libmicrohttpd is done with the stream: close the watch (UNWATCH)
static void
s_stream_free (void *cls)
{
    s_stream_t *self = (s_stream_t *) cls;
    act_http_job_destroy (&self->job);
    free (self->pending);
    free (self);
}

//  Queue text (taken) to write next
static void
s_stream_queue (s_stream_t *self, char *text)
{
    free (self->pending);
    self->pending = text;
    self->length = strlen (text);
    self->written = 0;
}

//  The SSE frame of one watch event (event: the broker's JSON text)
static char *
s_frame (s_stream_t *self, char *event)
{
    //  The broker's JSON is compact; a raw line break could only be white
    //  space between tokens, which a data line must not hold
    for (char *c = event; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    json_t *value = json_loads (event, 0, NULL);
    json_t *seq = json_object_get (value, "seq");
    char *frame;
    if (json_is_integer (seq))
        frame = zsys_sprintf ("id: %" JSON_INTEGER_FORMAT "\nevent: message\ndata: %s\n\n",
                              json_integer_value (seq), event);
    else
    if (json_object_get (value, "call"))
        frame = zsys_sprintf ("event: call\ndata: %s\n\n", event);
    else
    if (json_is_true (json_object_get (value, "deleted"))) {
        frame = zsys_sprintf ("event: deleted\ndata: %s\n\n", event);
        self->last = true;
    }
    else
        frame = zsys_sprintf (": unknown event %s\n\n", event);
    json_decref (value);
    return frame;
}

//  The SSE frame of the error that ends a stream: "event: error", data
//  {"error": {"code", "message"}}
static char *
s_error_frame (const act_err_t *err)
{
    //  A broker's message may be cut inside a UTF-8 sequence: jansson
    //  refuses such a string, so fall back to a plain one
    json_t *message = json_string (err->message);
    if (!message)
        message = json_string ("(message not valid UTF-8)");
    json_t *error = json_pack ("{s{ssso}}", "error", "code",
                               err->code? err->code: ACT_E_INTERNAL, "message", message);
    char *text = act_json_dump (error);
    json_decref (error);
    char *frame = zsys_sprintf ("event: error\ndata: %s\n\n", text);
    free (text);
    return frame;
}

//  The next text: an event, a keepalive, or the error that ended the watch
static void
s_stream_next (s_stream_t *self)
{
    bool ended;
    act_err_t err = { 0 };
    char *event = act_http_job_event (self->job, zclock_mono () + ACT_HTTP_SSE_KEEPALIVE_MS,
                                      &ended, &err);
    if (event) {
        s_stream_queue (self, s_frame (self, event));
        free (event);
    }
    else
    if (ended) {
        s_stream_queue (self, s_error_frame (&err));
        self->last = true;
    }
    else
        s_stream_queue (self, strdup (": keepalive\n\n"));
}

//  libmicrohttpd wants the next bytes: the rest of the text being
//  written, else the next event (blocking up to the keepalive)
static ssize_t
s_stream_read (void *cls, uint64_t position, char *buffer, size_t size)
{
    s_stream_t *self = (s_stream_t *) cls;
    if (!self->pending || self->written == self->length) {
        if (self->last || self->finished) {
            self->finished = true;
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        s_stream_next (self);
    }
    size_t chunk = self->length - self->written;
    if (chunk > size)
        chunk = size;
    memcpy (buffer, self->pending + self->written, chunk);
    self->written += chunk;
    return (ssize_t) chunk;
}

//  The first _seq to stream: after Last-Event-ID, else ?from= (default 1;
//  0: only messages appended from now on, after the context's last_seq as
//  CONTEXTS gives it). -1 when an argument is bad; -2 when CONTEXTS was
//  not answered with a page (failed: its reply, NULL for none), which
//  must not make the stream start from 1: a client asking for what comes
//  next got the whole history.
static long long
s_from (act_http_req_t *req, const char *context, act_reply_t **failed)
{
    const char *last = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                    "Last-Event-ID");
    if (last && *last) {
        char *end;
        errno = 0;
        long long seq = strtoll (last, &end, 10);
        return (*end || errno || seq < 0 || seq == INT64_MAX)? -1: seq + 1;
    }
    long long from = act_http_req_number (req, "from", 1, 0, INT64_MAX);
    if (from != 0)
        return from;
    act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                              "CONTEXTS", context, "", "1", NULL);
    char *text = reply && streq (reply->verb, "VALUE")? act_reply_arg (reply, 0): NULL;
    if (!text) {
        *failed = reply;
        return -2;
    }
    json_t *page = json_loads (text, 0, NULL);
    json_t *first = json_array_get (json_object_get (page, "contexts"), 0);
    const char *id = json_string_value (json_object_get (first, "context"));
    from = id && streq (id, context)
         ? json_integer_value (json_object_get (first, "last_seq")) + 1: 1;
    json_decref (page);
    free (text);
    act_reply_destroy (&reply);
    return from;
}

//  A WATCH is not acknowledged, so its refusal would come inside a stream
//  already answered 200: ask HISTORY of one message first, which actd
//  refuses the same way (a bad context id, another tenant's context, no
//  read right). A context that does not exist yet may be watched.
static bool
s_refused (act_http_req_t *req, const char *context, act_reply_t **reply)
{
    *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                  "HISTORY", context, "1", "1", NULL);
    char *code = *reply && streq ((*reply)->verb, "ERROR")? act_reply_arg (*reply, 0): NULL;
    bool refused = !*reply || (code && !streq (code, ACT_E_NOT_FOUND));
    free (code);
    if (!refused)
        act_reply_destroy (reply);
    return refused;
}

//  Whether the failed HISTORY (reply, NULL when none came) says actd is
//  away for now, not that it refuses the stream: no connection to actd
//  (unreachable: down, or not yet back), no answer in time (timeout:
//  actd stopped, or starved), the connection dropped (disconnected),
//  actd too busy (busy, as a stopping actd answers), or actd-http itself
//  stopping (unavailable: it is being restarted, as a rule). Such a
//  stream is worth retrying: err says why.
static bool
s_retryable (act_http_req_t *req, act_reply_t *reply, act_err_t *err)
{
    if (act_http_broker_stopping (req->broker)) {
        act_err_set (err, ACT_HTTP_E_UNAVAILABLE, ACT_HTTP_STOPPING);
        return true;
    }
    if (!reply) {
        act_err_set (err, ACT_E_TIMEOUT, "actd did not answer within %d ms (it may be down "
                     "or restarting); reconnect to retry", req->config->request_timeout_ms);
        return true;
    }
    char *code = act_reply_arg (reply, 0);
    char *message = act_reply_arg (reply, 1);
    const char *known = !code? NULL
                      : streq (code, ACT_E_BUSY)? ACT_E_BUSY
                      : streq (code, ACT_CLIENT_DISCONNECTED)? ACT_CLIENT_DISCONNECTED
                      : streq (code, ACT_CLIENT_UNREACHABLE)? ACT_CLIENT_UNREACHABLE: NULL;
    if (known)
        act_err_set (err, known, "%s", message? message: "");
    free (code);
    free (message);
    return known != NULL;
}

//  Answer req with the stream (taken): 200, text/event-stream, its text
//  read by s_stream_read
static enum MHD_Result
s_stream_answer (act_http_req_t *req, s_stream_t *stream)
{
    struct MHD_Response *response = MHD_create_response_from_callback (
        MHD_SIZE_UNKNOWN, 4096, s_stream_read, stream, s_stream_free);
    if (!response) {
        s_stream_free (stream);
        return MHD_NO;
    }
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header (response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header (response, "X-Accel-Buffering", "no");
    act_http_req_headers (response, false);
    enum MHD_Result rc = MHD_queue_response (req->connection, 200, response);
    MHD_destroy_response (response);
    req->status = 200;
    return rc;
}

//  The answer to a stream that actd is away for (err says why): 200, the
//  retry interval and one event: error, and the stream ends. Any other
//  status would make an EventSource give up for good; this way it comes
//  back by itself after retry, as after a stream ended busy.
static enum MHD_Result
s_stream_retry (act_http_req_t *req, const act_err_t *err)
{
    if (streq (req->method, "HEAD"))
        return act_http_req_send (req, 200, "text/event-stream", "", 0);
    s_stream_t *stream = calloc (1, sizeof *stream);
    char *error = s_error_frame (err);
    s_stream_queue (stream, zsys_sprintf (": stream\nretry: %d\n\n%s", ACT_HTTP_SSE_RETRY_MS,
                                          error));
    free (error);
    stream->last = true;
    return s_stream_answer (req, stream);
}

//  Answer a stream whose request to actd failed (reply: actd's ERROR, or
//  NULL for none; taken): retried when actd is away for now, else the
//  refusal's status
static enum MHD_Result
s_stream_failed (act_http_req_t *req, act_reply_t *reply)
{
    act_err_t err = { 0 };
    if (!s_retryable (req, reply, &err))
        return act_http_req_reply (req, reply, 500);
    act_reply_destroy (&reply);
    return s_stream_retry (req, &err);
}

enum MHD_Result
act_http_sse_start (act_http_req_t *req, const char *context)
{
    act_reply_t *refusal = NULL;
    if (s_refused (req, context, &refusal))
        return s_stream_failed (req, refusal);
    long long from = s_from (req, context, &refusal);
    if (from == -2)
        return s_stream_failed (req, refusal);
    long long all = act_http_req_number (req, "all", 0, 0, 1);
    if (from < 0 || all < 0)
        return act_http_req_error (req, ACT_E_BAD_ARGUMENT,
                                   "from and Last-Event-ID are a _seq, all is 0 or 1");
    if (streq (req->method, "HEAD"))     //  The headers of a stream, no watch
        return act_http_req_send (req, 200, "text/event-stream", "", 0);
    s_stream_t *stream = calloc (1, sizeof *stream);
    stream->job = act_http_broker_watch (req->broker, context, (uint64_t) from, all == 1,
                                         req->config->max_stream_bytes,
                                         req->config->max_stream_events);
    //  A first comment, so the headers go out before the first event
    s_stream_queue (stream, zsys_sprintf (": stream\nretry: %d\n\n", ACT_HTTP_SSE_RETRY_MS));
    return s_stream_answer (req, stream);
}
