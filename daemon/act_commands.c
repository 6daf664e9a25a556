/*  =========================================================================
    act_commands - the client command table (see act_commands.h).
    ========================================================================= */

#include "act_commands.h"
#include "act_frame.h"
#include "actd/act_text.h"

struct _act_commands_t {
    act_settings_t *settings;   //  max_message_bytes (borrowed)
    act_store_t *store;         //  HISTORY reads it (borrowed)
    act_cache_t *cache;         //  Contexts (borrowed)
    act_flow_t *flow;           //  Calls (borrowed)
    act_outbox_t *outbox;       //  Replies (borrowed)
    act_watches_t *watches;     //  Open WATCHes (borrowed)
    act_security_t *security;   //  Allowed client keys (borrowed)
    act_commands_stats_fn *stats;   //  Builds STATS
    void *stats_arg;            //  Its argument
    act_pages_t *pages;         //  HISTORY pages built in pieces (borrowed),
                                //  or NULL: read at once
    bool closed;                //  Stopped: every valid request is refused busy
};

//  One request, as the dispatcher checked it
typedef struct {
    const char *name;           //  Command, as in the table
    zframe_t *client;           //  Routing id of the client socket
    zframe_t *request;          //  Request id to echo
    const char *context;        //  First argument as a context id, or NULL
    zmq_msg_t *args [3];        //  Argument frames (NULL past nargs)
    size_t nargs;               //  Number of argument frames
    act_grant_t grant;          //  What the peer may do (its tenant)
} s_request_t;

typedef void (s_handler_fn) (act_commands_t *self, s_request_t *req);

typedef struct {
    const char *name;           //  As on the wire
    size_t least, most;         //  Argument frames after the request id
    bool context;               //  The first argument is a context id
    int right;                  //  ACT_RIGHT_* the peer needs; 0 (a row
                                //  that names none) needs admin
    s_handler_fn *handler;      //  Serves it; replies through the outbox
} s_command_t;

static s_handler_fn s_call, s_plan, s_append, s_resolve, s_view, s_history,
                    s_status, s_cancel, s_stats, s_ping, s_watch, s_unwatch, s_contexts,
                    s_delete, s_tools;

static const s_command_t s_commands [] = {
    { "CALL",    2, 2, true,  ACT_RIGHT_WRITE, s_call },
    { "PLAN",    2, 2, true,  ACT_RIGHT_WRITE, s_plan },
    { "APPEND",  2, 3, true,  ACT_RIGHT_WRITE, s_append },
    { "RESOLVE", 2, 3, true,  ACT_RIGHT_READ,  s_resolve },
    { "VIEW",    1, 2, true,  ACT_RIGHT_READ,  s_view },
    { "HISTORY", 3, 3, true,  ACT_RIGHT_READ,  s_history },
    { "STATUS",  1, 1, false, ACT_RIGHT_READ,  s_status },
    { "CANCEL",  1, 1, false, ACT_RIGHT_WRITE, s_cancel },
    { "STATS",   0, 0, false, ACT_RIGHT_ADMIN, s_stats },
    { "PING",    0, 0, false, ACT_RIGHT_NONE,  s_ping },
    { "WATCH",   2, 3, true,  ACT_RIGHT_READ,  s_watch },
    { "UNWATCH", 1, 1, false, ACT_RIGHT_NONE,  s_unwatch },
    { "CONTEXTS", 0, 3, false, ACT_RIGHT_READ, s_contexts },
    { "DELETE",  1, 1, true,  ACT_RIGHT_WRITE, s_delete },
    { "TOOLS",   0, 1, false, ACT_RIGHT_READ,  s_tools },
};
#define S_NCOMMANDS (sizeof s_commands / sizeof s_commands [0])

act_commands_t *
act_commands_new (act_settings_t *settings, act_store_t *store, act_cache_t *cache,
                  act_flow_t *flow, act_outbox_t *outbox, act_watches_t *watches,
                  act_security_t *security, act_commands_stats_fn *stats, void *stats_arg)
{
    act_commands_t *self = (act_commands_t *) calloc (1, sizeof (act_commands_t));
    if (self)
        *self = (act_commands_t) { settings, store, cache, flow, outbox, watches, security,
                                   stats, stats_arg, NULL, false };
    return self;
}

void
act_commands_destroy (act_commands_t **self_p)
{
    if (self_p && *self_p) {
        free (*self_p);
        *self_p = NULL;
    }
}

void
act_commands_close (act_commands_t *self)
{
    self->closed = true;
}

size_t
act_commands_count (void)
{
    return S_NCOMMANDS;
}

const char *
act_commands_name (size_t index, size_t *least, size_t *most)
{
    if (index >= S_NCOMMANDS)
        return NULL;
    *least = s_commands [index].least;
    *most = s_commands [index].most;
    return s_commands [index].name;
}


//  --------------------------------------------------------------------------
//  Arguments

//  A frame parsed as JSON; NULL with err when it is not JSON
static json_t *
s_frame_json (zmq_msg_t *frame, act_err_t *err)
{
    return act_json_parse (act_part_data (frame), act_part_size (frame), err);
}

//  A decimal argument no larger than limit; -1 with err when it is not one
static int
s_decimal_arg (zmq_msg_t *frame, const char *name, uint64_t limit, uint64_t *value,
               act_err_t *err)
{
    if (!act_decimal_parse (act_part_data (frame), act_part_size (frame), limit, value))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "%s must be a decimal number up to %" PRIu64, name, limit);
    return 0;
}

//  An optional instance frame: 1 to 128 bytes of UTF-8 without NUL
static int
s_instance_arg (zmq_msg_t *frame, char **instance, act_err_t *err)
{
    *instance = NULL;
    if (!frame)
        return 0;
    *instance = act_part_string (frame);
    if (!*instance || !**instance || strlen (*instance) > ACT_MAX_INSTANCE
    ||  !act_utf8_valid (*instance, strlen (*instance), NULL)) {
        zstr_free (instance);
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "an instance is 1 to %d bytes of UTF-8", ACT_MAX_INSTANCE);
    }
    return 0;
}

static void
s_reply_json (act_commands_t *self, s_request_t *req, const char *verb, const json_t *body,
              bool durable)
{
    act_out_t *out = act_outbox_reply (self->outbox, req->client, req->request, verb, durable);
    char *text = act_json_dump (body);
    act_out_addstr (out, text);
    free (text);
}

//  What a too_large VIEW or RESOLVE tells the client to do
#define S_RESOLVE_PART "resolve a part of it"

static void
s_reply_error (act_commands_t *self, s_request_t *req, act_err_t *err)
{
    act_outbox_error (self->outbox, req->client, req->request, req->name, err, NULL);
}

//  VALUE with text (which it frees), or ERROR too_large when text is over
//  max_reply_bytes (PROTOCOL.md section 1: replies are bounded): a reply
//  that big would sit in the outbox and the socket's queue for a value
//  the client can read in parts, as hint (for the error's message) says
static void
s_reply_bounded (act_commands_t *self, s_request_t *req, char *text, const char *hint)
{
    act_err_t err = { 0 };
    if (!text) {
        act_err_set (&err, ACT_E_INTERNAL, "the value could not be serialized");
        s_reply_error (self, req, &err);
        return;
    }
    size_t size = strlen (text);
    if (size > (size_t) self->settings->max_reply_bytes) {
        act_err_set (&err, ACT_E_TOO_LARGE,
                     "the value is %zu bytes, over max_reply_bytes (%lld); %s",
                     size, self->settings->max_reply_bytes, hint);
        free (text);
        s_reply_error (self, req, &err);
        return;
    }
    act_out_add (act_outbox_reply (self->outbox, req->client, req->request, "VALUE", false),
                 text, size);
    free (text);
}


//  --------------------------------------------------------------------------
//  The handlers, in the table's order

//  CALL and PLAN: the calls go to the flow, all or none. A CALL goes as
//  its text, made into a call in one pass; a PLAN as a tree
static void
s_submit (act_commands_t *self, s_request_t *req, bool plan)
{
    if (!plan) {
        act_flow_submit (self->flow, req->client, req->request, req->name, req->context,
                         NULL, act_part_data (req->args [1]),
                         act_part_size (req->args [1]));
        return;
    }
    act_err_t err = { 0 };
    json_t *body = s_frame_json (req->args [1], &err);
    if (body && (!json_is_array (body) || json_array_size (body) == 0))
        act_err_set (&err, ACT_E_BAD_CALL, "a plan is a non-empty JSON array of calls");
    if (err.code)
        s_reply_error (self, req, &err);
    else
        act_flow_submit (self->flow, req->client, req->request, req->name, req->context,
                         body, NULL, 0);
    json_decref (body);
}

static void
s_call (act_commands_t *self, s_request_t *req)
{
    s_submit (self, req, false);
}

static void
s_plan (act_commands_t *self, s_request_t *req)
{
    s_submit (self, req, true);
}

//  The store's text for an APPEND key frame (1-128 bytes, any bytes, as
//  PROTOCOL.md 1.1 says), or NULL when its size is out of bounds. UTF-8
//  without NUL is kept as it is; other bytes (a raw UUID, say), and a key
//  that starts with \x01, become \x01 and their hex: the stores keep
//  text (PostgreSQL's holds neither NUL nor invalid UTF-8: such a key was
//  not kept, and looking it up failed), and no kept key starts with \x01,
//  so two keys never meet
static char *
s_append_key (zmq_msg_t *frame)
{
    const char *data = (const char *) zmq_msg_data (frame);
    size_t size = zmq_msg_size (frame);
    if (size == 0 || size > 128)
        return NULL;
    if (data [0] != 1 && !memchr (data, 0, size) && act_utf8_valid (data, size, NULL))
        return strndup (data, size);
    char *key = malloc (1 + 2 * size + 1);
    if (key) {
        key [0] = 1;
        act_hex_write (key + 1, data, size);
    }
    return key;
}

//  APPEND context message [key]: with an idempotency key (1-128 bytes),
//  a second APPEND with the same key appends nothing and answers the
//  first one's _seq. A key the store could not be asked about is refused
//  (internal), never taken for new: the message would be appended twice
static void
s_append (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    json_t *message = NULL, *stored = NULL;
    act_context_t *context = NULL;
    char *key = req->args [2]? s_append_key (req->args [2]): NULL;
    uint64_t seq = 0;
    if (act_flow_stopping (self->flow))
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
    else
    if (req->args [2] && !key)
        act_err_set (&err, ACT_E_BAD_ARGUMENT, "an idempotency key is 1 to 128 bytes");
    else
    if ((message = s_frame_json (req->args [1], &err))
    &&  (context = act_cache_get (self->cache, req->context, true, &err))) {
        if (key && context->stored
        &&  act_store_append_key (self->store, req->context, key, &seq) < 0)
            act_err_set (&err, ACT_E_INTERNAL, "the store could not tell whether the "
                         "idempotency key was used in context %s", req->context);
        else
        if (!seq)
            stored = act_ctx_append (context->ctx, message, &err);
    }
    json_decref (message);
    if (stored) {
        act_cache_store (self->cache, context);
        seq = (uint64_t) json_integer_value (json_object_get (stored, "_seq"));
        char *text = act_json_dump (stored);
        act_store_put_message (self->store, req->context, seq, text, strlen (text));
        context->written = act_store_generation (self->store);
        if (key)
            act_store_put_append_key (self->store, req->context, key, seq);
        act_watches_message (self->watches, req->context, seq, text);
        free (text);
        json_decref (stored);
    }
    if (seq) {
        json_t *reply = json_pack ("{sI}", "seq", (json_int_t) seq);
        s_reply_json (self, req, "OK", reply, true);
        json_decref (reply);
    }
    else {
        s_reply_error (self, req, &err);
        act_cache_release (self->cache, context);
    }
    free (key);
}

static void
s_resolve (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    char *instance = NULL;
    char *text = act_part_string (req->args [1]);
    act_expr_t *expr = NULL;
    if (!text || !act_utf8_valid (text, strlen (text), NULL) || !act_ref_is_reference (text))
        act_err_set (&err, ACT_E_BAD_REFERENCE,
                     "RESOLVE takes a reference expression (starting with a dagger), at byte 0");
    else
        expr = act_expr_parse (text, false, &err);
    if (expr && s_instance_arg (req->args [2], &instance, &err) == 0) {
        act_context_t *context = act_cache_get (self->cache, req->context, false, &err);
        bool absent = false;
        size_t max = (size_t) self->settings->max_reply_bytes;
        char *value = context? act_ctx_resolve_dump (context->ctx, expr, instance, max, &absent)
                             : NULL;
        if (value)
            s_reply_bounded (self, req, value, S_RESOLVE_PART);
        else
        if (context && absent)
            act_err_set (&err, ACT_E_NOT_FOUND, "'%.200s' is absent", text);
        else
        if (context)
            act_err_set (&err, ACT_E_TOO_LARGE, "the value is over max_reply_bytes (%zu); %s",
                         max, S_RESOLVE_PART);
    }
    if (err.code)
        s_reply_error (self, req, &err);
    act_expr_destroy (&expr);
    free (instance);
    free (text);
}

static void
s_view (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    zmq_msg_t *format = req->args [1];
    bool text = format && act_part_is (format, "text");
    act_context_t *context = NULL;
    if (format && !text && !act_part_is (format, "json"))
        act_err_set (&err, ACT_E_BAD_ARGUMENT, "VIEW format is json or text");
    else
        context = act_cache_get (self->cache, req->context, false, &err);
    if (!context) {
        s_reply_error (self, req, &err);
        return;
    }
    //  Written straight into one buffer, and given up as soon as it passes
    //  the bound: a view of many GB was built whole, then refused
    size_t max = (size_t) self->settings->max_reply_bytes, size;
    char *view = act_ctx_view_dump (context->ctx, text, max, &size);
    if (view)
        s_reply_bounded (self, req, view, S_RESOLVE_PART);
    else {
        if (size > max)
            act_err_set (&err, ACT_E_TOO_LARGE, "the view is over max_reply_bytes (%lld); %s",
                         self->settings->max_reply_bytes, S_RESOLVE_PART);
        else
            act_err_set (&err, ACT_E_INTERNAL, "out of memory writing the view");
        s_reply_error (self, req, &err);
    }
}

static void
s_history (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    uint64_t from, limit;
    json_t *page = NULL;
    if (s_decimal_arg (req->args [1], "from-seq", UINT64_MAX / 2, &from, &err)
    ||  s_decimal_arg (req->args [2], "limit", ACT_HISTORY_LIMIT, &limit, &err)
    ||  !act_cache_get (self->cache, req->context, false, &err))
        ;
    else
    if (self->pages) {
        //  Built in pieces over the next passes (act_pages.h)
        act_pages_start (self->pages, req->client, req->request,
                         act_outbox_enveloped (self->outbox, req->client), req->context,
                         from, (size_t) limit);
        return;
    }
    else
    if (!(page = act_store_history (self->store, req->context, from, limit,
                                    (size_t) self->settings->max_reply_bytes)))
        act_err_set (&err, ACT_E_INTERNAL, "the store could not read the history");
    if (page)
        s_reply_json (self, req, "VALUE", page, false);
    else
        s_reply_error (self, req, &err);
    json_decref (page);
}

static void
s_status (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    char *id = act_part_string (req->args [0]);
    json_t *status = act_flow_status (self->flow, &req->grant, id, &err);
    if (status)
        s_reply_json (self, req, "VALUE", status, false);
    else
        s_reply_error (self, req, &err);
    json_decref (status);
    free (id);
}

static void
s_cancel (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    char *id = act_part_string (req->args [0]);
    int rc = act_flow_cancel_id (self->flow, &req->grant, id, &err);
    if (rc < 0)
        s_reply_error (self, req, &err);
    else        //  Durable when it cancelled: the outcome is stored first
        act_outbox_reply (self->outbox, req->client, req->request, "OK", rc == 1);
    free (id);
}

static void
s_stats (act_commands_t *self, s_request_t *req)
{
    json_t *stats = self->stats (self->stats_arg);
    s_reply_json (self, req, "VALUE", stats, false);
    json_decref (stats);
}

static void
s_ping (act_commands_t *self, s_request_t *req)
{
    act_outbox_reply (self->outbox, req->client, req->request, "PONG", false);
}

//  TOOLS [activity]: the registry of tools (PROTOCOL.md section 2.1)
static void
s_tools (act_commands_t *self, s_request_t *req)
{
    char *activity = req->args [0]? act_part_string (req->args [0]): NULL;
    if (req->args [0] && (!activity || !*activity || strlen (activity) > ACT_MAX_TOOL)) {
        act_err_t err = { 0 };
        act_err_set (&err, ACT_E_BAD_ARGUMENT, "an activity is 1 to %d bytes", ACT_MAX_TOOL);
        s_reply_error (self, req, &err);
    }
    else {
        json_t *tools = act_tools_json (act_flow_tools (self->flow), activity);
        //  Whole or not at all, as a value: a part of the registry, handed
        //  to a model, would lack tools without a word, and its object has
        //  no key left for a count (any name may be an activity's)
        s_reply_bounded (self, req, act_json_dump (tools),
                         "ask TOOLS with an activity for its entry alone");
        json_decref (tools);
    }
    free (activity);
}


//  A watch of calls starts with the state of each live call of its
//  context (then it gets their changes)
static void
s_tell_live (act_commands_t *self, s_request_t *req, act_context_t *context)
{
    json_t *statuses = act_flow_statuses (self->flow, context);
    size_t index;
    json_t *status;
    json_array_foreach (statuses, index, status) {
        char *text = act_json_dump (status);
        act_watches_tell (self->watches, req->client, req->request, text);
        free (text);
    }
    json_decref (statuses);
}

//  WATCH context from-seq [messages|all]: the backlog from from-seq (0:
//  only what comes from now on), then live. A context that does not exist
//  yet may be watched; on a shared store this broker then owns it.
static void
s_watch (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    uint64_t from = 0;
    zmq_msg_t *what = req->args [2];
    bool calls = what && act_part_is (what, "all");
    act_context_t *context = NULL;
    if (s_decimal_arg (req->args [1], "from-seq", UINT64_MAX / 2, &from, &err))
        ;
    else
    if (act_outbox_enveloped (self->outbox, req->client))
        act_err_set (&err, ACT_E_BAD_ARGUMENT,
                     "WATCH streams events: a REQ socket takes one reply per request "
                     "(use a DEALER socket)");
    else
    if (what && !calls && !act_part_is (what, "messages"))
        act_err_set (&err, ACT_E_BAD_ARGUMENT, "WATCH follows messages or all");
    else
        context = act_cache_get (self->cache, req->context, true, &err);
    if (context) {
        uint64_t next = act_ctx_next_seq (context->ctx);
        if (act_watches_open (self->watches, req->client, req->request, req->context,
                              from? from: next, from > 0 && from < next, calls, &err) == 0) {
            //  The watch ends with the socket that opened it, even when
            //  a new socket comes back with the same routing id
            act_security_watched (self->security, req->client);
            if (calls)
                s_tell_live (self, req, context);
        }
        act_cache_release (self->cache, context);   //  If it was made for this
    }
    //  act_watches_open refuses only busy, at max_watches
    if (err.code)
        act_outbox_error (self->outbox, req->client, req->request, req->name, &err,
                          context && streq (err.code, ACT_E_BUSY)? "max_watches": NULL);
}

//  An optional argument that is a context id or a prefix of one (empty
//  allowed); true when absent or valid
static bool
s_prefix_arg (zmq_msg_t *frame, char **text)
{
    *text = frame? act_part_string (frame): NULL;
    if (!frame)
        return true;
    if (!*text || strlen (*text) > ACT_MAX_CONTEXT_ID)
        return false;
    return **text == 0 || act_ctx_id_valid (*text);
}

//  CONTEXTS [prefix] [after] [limit]: a page of the stored contexts, in
//  byte order of their ids, with "next" when more remain
static void
s_contexts (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    char *prefix = NULL, *after = NULL;
    uint64_t limit = 100;
    json_t *page = NULL;
    if (!s_prefix_arg (req->args [0], &prefix) || !s_prefix_arg (req->args [1], &after))
        act_err_set (&err, ACT_E_BAD_ARGUMENT,
                     "a prefix and an after are empty or of [A-Za-z0-9._:@/-], up to %d bytes",
                     ACT_MAX_CONTEXT_ID);
    else
    if (req->args [2] && (s_decimal_arg (req->args [2], "limit", ACT_HISTORY_LIMIT, &limit, &err)
                      || (limit == 0 && act_err_set (&err, ACT_E_BAD_ARGUMENT,
                                                     "limit is 1 to %d", ACT_HISTORY_LIMIT))))
        ;
    else
    if (!act_security_prefix (&req->grant, &prefix))
        page = json_array ();   //  Nothing of this tenant starts so
    else
    if (!(page = act_store_contexts (self->store, prefix, after, (size_t) limit + 1))) {
        //  Cut off from a shared store past two thirds of the lease: a
        //  live peer lists them, as it serves the contexts' requests
        const char *peer = act_store_elsewhere (self->store, prefix? prefix: "");
        if (peer)
            act_err_set (&err, ACT_E_MOVED, "%s", peer);
        else
            act_err_set (&err, ACT_E_INTERNAL, "the store could not list contexts");
    }
    if (page) {
        json_t *reply = act_pages_contexts (page, (size_t) limit,
                                          (size_t) self->settings->max_reply_bytes);
        s_reply_json (self, req, "VALUE", reply, false);
        json_decref (reply);
    }
    else
        s_reply_error (self, req, &err);
    free (prefix);
    free (after);
}

//  DELETE context: its calls not ended are cancelled, then it is removed;
//  OK after that commit
static void
s_delete (act_commands_t *self, s_request_t *req)
{
    act_err_t err = { 0 };
    json_t *counts = NULL;
    if (act_flow_stopping (self->flow))
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
    else
        counts = act_flow_delete (self->flow, req->context, &err);
    if (counts)
        s_reply_json (self, req, "OK", counts, true);
    else
        s_reply_error (self, req, &err);
    json_decref (counts);
}

//  UNWATCH request-id: OK whether such a watch was open or not
static void
s_unwatch (act_commands_t *self, s_request_t *req)
{
    zframe_t *request = zframe_new (zmq_msg_data (req->args [0]), zmq_msg_size (req->args [0]));
    act_watches_close (self->watches, req->client, request);
    zframe_destroy (&request);
    act_outbox_reply (self->outbox, req->client, req->request, "OK", false);
}


//  --------------------------------------------------------------------------
//  The dispatcher

//  Check the request against its row: request id, arity, frame sizes and
//  the context id, copied into context (ACT_MAX_CONTEXT_ID + 1 bytes: on
//  the caller's stack, not the heap, as every request names one). Returns
//  the row, or NULL with err set.
static const s_command_t *
s_check (act_commands_t *self, zmq_msg_t *command, s_request_t *req, char *context,
         act_err_t *err)
{
    const s_command_t *row = NULL;
    for (size_t i = 0; i < S_NCOMMANDS && !row; i++)
        if (act_part_is (command, s_commands [i].name))
            row = &s_commands [i];
    req->name = row? row->name: "?";
    if (zframe_size (req->request) == 0 || zframe_size (req->request) > ACT_MAX_REQUEST_ID)
        act_err_set (err, ACT_E_BAD_FRAME, "a request id is 1 to %d bytes", ACT_MAX_REQUEST_ID);
    else
    if (!row)
        act_err_set (err, ACT_E_UNKNOWN_COMMAND, "unknown command");
    else
    if (req->nargs < row->least || req->nargs > row->most)
        act_err_set (err, ACT_E_BAD_FRAME, "%s takes %zu to %zu argument frames, not %zu",
                     row->name, row->least, row->most, req->nargs);
    for (size_t index = 0; index < req->nargs && !err->code; index++)
        if (act_part_size (req->args [index]) > (size_t) self->settings->max_message_bytes)
            act_err_set (err, ACT_E_TOO_LARGE,
                         "a frame of %zu bytes is over max_message_bytes (%lld)",
                         act_part_size (req->args [index]), self->settings->max_message_bytes);
    if (!err->code && row->context) {
        size_t size = act_part_size (req->args [0]);
        if (size <= ACT_MAX_CONTEXT_ID) {
            memcpy (context, act_part_data (req->args [0]), size);
            context [size] = 0;
        }
        if (size > ACT_MAX_CONTEXT_ID || strlen (context) != size
        ||  !act_ctx_id_valid (context)) {
            act_err_set (err, ACT_E_BAD_CONTEXT,
                         "a context id is 1 to %d bytes of [A-Za-z0-9._:@/-]",
                         ACT_MAX_CONTEXT_ID);
        }
    }
    return err->code? NULL: row;
}

//  True when the request's grant allows row (its right, and its context
//  within the tenant's prefix); else false with err unauthorized, logged
//  at most once in a while per key and reason (a flood costs a few lines)
static bool
s_permitted (const s_command_t *row, s_request_t *req, const char *user, act_err_t *err)
{
    static const char *names [] = { "", "read", "write", "", "admin" };
    int right = row->right? row->right: ACT_RIGHT_ADMIN;
    const char *tenant = req->grant.tenant? req->grant.tenant: "(client_keys)";
    if (!(req->grant.rights & right)) {
        act_log_peer (LOG_WARNING, user? user: "(none)", "right missing",
                      "tenant %s (key %s): %s refused: it lacks the %s right", tenant,
                      user? user: "(none)", row->name, right < 5? names [right]: "?");
        act_err_set (err, ACT_E_UNAUTHORIZED, "%s needs the %s right", row->name,
                     right < 5? names [right]: "?");
        return false;
    }
    if (req->context && !act_grant_reaches (&req->grant, req->context)) {
        act_log_peer (LOG_WARNING, user? user: "(none)", "context outside its prefix",
                      "tenant %s (key %s): %s of context %.128s refused: outside its "
                      "prefix %s", tenant, user? user: "(none)", row->name, req->context,
                      req->grant.prefix);
        act_err_set (err, ACT_E_UNAUTHORIZED, "context %.128s is outside this tenant's "
                     "prefix", req->context);
        return false;
    }
    return true;
}

void
act_commands_set_pages (act_commands_t *self, act_pages_t *pages)
{
    self->pages = pages;
}

//  Log and drop a client message too short to carry a request id
static void
s_drop_short (act_msg_t *msg)
{
    char *peer = msg->held? act_msg_strhex (act_msg_part (msg, 0)): strdup ("?");
    act_log_peer (LOG_INFO, peer, "client message without a request id or ACTC01 header",
                  "client message without a request id or ACTC01 header from %s dropped",
                  peer);
    free (peer);
}

void
act_commands_message (act_commands_t *self, act_msg_t *msg)
{
    //  [routing id][ACTC01][command][request id][args...]; a REQ socket's
    //  empty delimiter frame after the routing id is read as if absent;
    //  the replies get it back (PROTOCOL.md section 1)
    zmq_msg_t *delimiter = act_msg_part (msg, 1);
    bool from_req = delimiter && zmq_msg_size (delimiter) == 0;
    size_t at = from_req? 2: 1;
    if (msg->held == 0 || msg->size < at + 3
    ||  !act_part_is (act_msg_part (msg, at), ACT_CLIENT_HEADER)) {
        s_drop_short (msg);
        return;
    }
    zframe_t *client = act_msg_routing (msg);
    zmq_msg_t *header = act_msg_part (msg, at);
    zmq_msg_t *command = act_msg_part (msg, at + 1);
    s_request_t req = { .client = client, .request = act_msg_frame (msg, at + 2),
                        .name = "(any)" };
    req.nargs = msg->size - at - 3;
    for (size_t i = 0; i < req.nargs && i < 3; i++)
        req.args [i] = act_msg_part (msg, at + 3 + i);
    act_err_t err = { 0 };
    char context [ACT_MAX_CONTEXT_ID + 1];
    act_outbox_envelope (self->outbox, from_req? client: NULL);
    //  Metadata rides on the frames the peer sent, not on the routing id;
    //  its key is read once (each read is a lookup in libzmq)
    const char *user = act_part_meta (header, "User-Id");
    act_outbox_serving (self->outbox, client, user);
    if (!act_security_client_grant (self->security, header, &req.grant)) {
        act_log_peer (LOG_WARNING, user? user: "(none)", "CURVE client refused",
                      "CURVE: client refused: key %s is not in %s nor in a tenant",
                      user? user: "(none)", self->settings->client_keys?
                      self->settings->client_keys: "security/client_keys (not set)");
        act_err_set (&err, ACT_E_UNAUTHORIZED, "this client's CURVE key is not allowed");
        s_reply_error (self, &req, &err);
    }
    else {
        const s_command_t *row = s_check (self, command, &req, context, &err);
        req.context = row && row->context? context: NULL;
        if (row && s_permitted (row, &req, user, &err) && self->closed)
            act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
        if (err.code)
            s_reply_error (self, &req, &err);
        else
            row->handler (self, &req);
    }
    act_outbox_envelope (self->outbox, NULL);
    act_outbox_serving (self->outbox, NULL, NULL);
    zframe_destroy (&req.request);
}
