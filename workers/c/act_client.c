/*  =========================================================================
    act_client - a C client of actd.
    ========================================================================= */

#include "actd/act_client.h"
#include "actd/act_json.h"
#include "act_curve_int.h"

//  Several brokers sharing a store (PROTOCOL.md, "moved"): requests about a
//  context go first to the broker rendezvous hashing names, then to the
//  owner a "moved" reply names; a broker that does not answer is skipped
//  for a while and the request goes to the next one.
#define S_MAX_HOPS      5       //  moved replies followed for one request
#define S_DEAD_MS       10000   //  A silent broker is skipped this long

//  One broker: a DEALER connected to it
typedef struct {
    char *endpoint;             //  Its client endpoint
    zsock_t *socket;            //  DEALER to it
    int64_t dead_until;         //  Skipped until then (it did not answer)
} s_link_t;

//  A request sent and not answered yet, to send again when moved
typedef struct {
    char *request;              //  Request id
    char *command;              //  Command
    zmsg_t *args;               //  Its argument frames (a copy)
    char *context;              //  Context it is about, or NULL
    s_link_t *link;             //  Broker it was sent to
    int hops;                   //  moved replies followed so far
    int64_t sent;               //  When it was (last) sent
} s_pending_t;

struct _act_client_t {
    zlistx_t *links;            //  s_link_t, the endpoints given, then learned
    zpoller_t *poller;          //  Polls every link's socket
    zhashx_t *owners;           //  Context -> s_link_t learned from moved
    zhashx_t *accepted;         //  Call id -> s_link_t that accepted it
    zhashx_t *pending;          //  Request id -> s_pending_t
    zlistx_t *kept;             //  act_reply_t received but not yet taken
    int timeout;                //  Milliseconds a synchronous request waits
    uint64_t sequence;          //  Makes request ids
    act_curve_t curve;          //  CURVE: the broker's key, this client's certificate
};

static void
s_reply_free (void **item)
{
    act_reply_destroy ((act_reply_t **) item);
}

static void
s_link_destroy (void **item)
{
    s_link_t *link = (s_link_t *) *item;
    zsock_destroy (&link->socket);
    free (link->endpoint);
    free (link);
    *item = NULL;
}

static void
s_pending_destroy (void **item)
{
    s_pending_t *pending = (s_pending_t *) *item;
    free (pending->request);
    free (pending->command);
    zmsg_destroy (&pending->args);
    free (pending->context);
    free (pending);
    *item = NULL;
}

//  Connect a link to endpoint (with CURVE when set); NULL if it is not valid
static s_link_t *
s_link_add (act_client_t *self, const char *endpoint)
{
    for (s_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (streq (link->endpoint, endpoint))
            return link;
    s_link_t *link = calloc (1, sizeof *link);
    link->endpoint = strdup (endpoint);
    link->socket = act_curve_dealer (&self->curve);
    if (zsock_connect (link->socket, "%s", endpoint)) {
        void *item = link;
        s_link_destroy (&item);
        return NULL;
    }
    zlistx_add_end (self->links, link);
    zpoller_add (self->poller, link->socket);
    return link;
}

act_client_t *
act_client_new (const char *endpoint)
{
    act_client_t *self = calloc (1, sizeof *self);
    self->links = zlistx_new ();
    zlistx_set_destructor (self->links, s_link_destroy);
    self->poller = zpoller_new (NULL);
    self->owners = zhashx_new ();
    self->accepted = zhashx_new ();
    self->pending = zhashx_new ();
    zhashx_set_destructor (self->pending, s_pending_destroy);
    self->kept = zlistx_new ();
    zlistx_set_destructor (self->kept, s_reply_free);
    self->timeout = 30000;
    //  A list of brokers: "tcp://a:5555,tcp://b:5555"
    char *list = strdup (endpoint? endpoint: ACT_CLIENT_ENDPOINT);
    for (char *item = strtok (list, ", "); item; item = strtok (NULL, ", "))
        if (!s_link_add (self, item)) {
            free (list);
            act_client_destroy (&self);
            return NULL;
        }
    free (list);
    if (zlistx_size (self->links) == 0)
        act_client_destroy (&self);
    return self;
}

void
act_client_destroy (act_client_t **self_p)
{
    if (self_p && *self_p) {
        act_client_t *self = *self_p;
        zpoller_destroy (&self->poller);
        zhashx_destroy (&self->pending);
        zhashx_destroy (&self->owners);
        zhashx_destroy (&self->accepted);
        zlistx_destroy (&self->links);
        zlistx_destroy (&self->kept);
        act_curve_reset (&self->curve);
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
    if (act_curve_set (&self->curve, server_public, certificate_file))
        return -1;
    //  The sockets connected already; CURVE must be set before connecting:
    //  connect them again
    zlistx_t *endpoints = zlistx_new ();
    zlistx_set_destructor (endpoints, (zlistx_destructor_fn *) zstr_free);
    for (s_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        zlistx_add_end (endpoints, strdup (link->endpoint));
    zpoller_destroy (&self->poller);
    self->poller = zpoller_new (NULL);
    zhashx_purge (self->owners);
    zhashx_purge (self->accepted);
    zlistx_purge (self->links);
    int rc = 0;
    for (char *endpoint = zlistx_first (endpoints); endpoint; endpoint = zlistx_next (endpoints))
        if (!s_link_add (self, endpoint))
            rc = -1;
    zlistx_destroy (&endpoints);
    return rc;
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

//  The rendezvous score of a broker for a key, which every actd client
//  library computes the same way: FNV-1a (64 bits) of endpoint "\n" key,
//  then MurmurHash3's 64-bit finalizer. (FNV-1a alone mixes its last bytes
//  into the high bits too little: the endpoint would decide every key.)
static uint64_t
s_score (const char *endpoint, const char *key)
{
    uint64_t hash = 14695981039346656037ULL;
    for (const char *c = endpoint; *c; c++)
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    hash = (hash ^ (unsigned char) '\n') * 1099511628211ULL;
    for (const char *c = key; *c; c++)
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdULL;
    hash ^= hash >> 33;
    hash *= 0xc4ceb9fe1a85ec53ULL;
    hash ^= hash >> 33;
    return hash;
}

//  The broker for a request about key (a context, or NULL): the owner
//  learned from moved, else the live link with the highest score (ties: the
//  smaller endpoint), skipping avoid
static s_link_t *
s_route (act_client_t *self, const char *key, s_link_t *avoid)
{
    if (key) {
        s_link_t *owner = zhashx_lookup (self->owners, key);
        if (owner && owner != avoid && owner->dead_until <= zclock_mono ())
            return owner;
    }
    s_link_t *best = NULL;
    uint64_t best_score = 0;
    int64_t now = zclock_mono ();
    for (int pass = 0; pass < 2 && !best; pass++)
        for (s_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links)) {
            //  First pass: live links only; second: any but avoid
            if (link == avoid || (pass == 0 && link->dead_until > now))
                continue;
            uint64_t score = key? s_score (link->endpoint, key): 0;
            if (!best || score > best_score
            ||  (score == best_score && strcmp (link->endpoint, best->endpoint) < 0)) {
                best = link;
                best_score = score;
            }
        }
    return best? best: zlistx_first (self->links);
}

//  Send pending to its link: [ACTC01][command][request][args...]
static void
s_transmit (s_pending_t *pending)
{
    zmsg_t *msg = zmsg_dup (pending->args);
    zmsg_pushstr (msg, pending->request);
    zmsg_pushstr (msg, pending->command);
    zmsg_pushstr (msg, "ACTC01");
    pending->sent = zclock_mono ();
    //  Not sent (no pipe to a broker that refused this client's key): the
    //  request stays pending and times out, or goes to another broker, as
    //  when a broker says nothing
    act_curve_send (pending->link->socket, &msg);
}

int
act_client_send (act_client_t *self, char *request, const char *command, ...)
{
    snprintf (request, 24, "c%" PRIu64, ++self->sequence);
    s_pending_t *pending = calloc (1, sizeof *pending);
    pending->request = strdup (request);
    pending->command = strdup (command);
    pending->args = zmsg_new ();
    va_list args;
    va_start (args, command);
    for (const char *arg = va_arg (args, const char *); arg; arg = va_arg (args, const char *))
        zmsg_addstr (pending->args, arg);
    va_end (args);
    //  Which broker: by context, by the broker that accepted the call, or any
    const char *first = zmsg_size (pending->args)? zframe_strdup (zmsg_first (pending->args)): NULL;
    bool by_context = streq (command, "CALL") || streq (command, "PLAN")
                   || streq (command, "APPEND") || streq (command, "RESOLVE")
                   || streq (command, "VIEW") || streq (command, "HISTORY");
    if (by_context && first)
        pending->context = strdup (first);
    s_link_t *accepted = (first && !by_context)? zhashx_lookup (self->accepted, first): NULL;
    pending->link = accepted? accepted: s_route (self, pending->context, NULL);
    free ((char *) first);
    zhashx_update (self->pending, request, pending);
    s_transmit (pending);
    return 0;
}

//  A reply as the caller sees it, or NULL when it was handled here (a
//  moved reply followed by sending the request again)
static act_reply_t *
s_reply_handle (act_client_t *self, s_link_t *link, zmsg_t *msg)
{
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
    if (!reply)
        return NULL;
    s_pending_t *pending = zhashx_lookup (self->pending, reply->request);
    char *code = streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
    if (pending && code && streq (code, "moved") && pending->hops < S_MAX_HOPS) {
        //  Another broker owns the context: send the request there
        char *owner = act_reply_arg (reply, 1);
        s_link_t *target = owner && *owner? s_link_add (self, owner): NULL;
        if (target) {
            if (pending->context)
                zhashx_update (self->owners, pending->context, target);
            pending->link = target;
            pending->hops++;
            s_transmit (pending);
            act_reply_destroy (&reply);
        }
        free (owner);
    }
    else
    if (pending) {
        if (streq (reply->verb, "ACCEPTED")) {
            //  STATUS and CANCEL of these calls start at this broker
            char *ids = act_reply_arg (reply, 0);
            json_t *list = ids && ids [0] == '['? json_loads (ids, 0, NULL): NULL;
            if (list) {
                size_t index;
                json_t *id;
                json_array_foreach (list, index, id)
                    zhashx_update (self->accepted, json_string_value (id), link);
            }
            else
            if (ids)
                zhashx_update (self->accepted, ids, link);
            json_decref (list);
            free (ids);
            if (pending->context)
                zhashx_update (self->owners, pending->context, link);
        }
        if (!streq (reply->verb, "ERROR") || !code || !streq (code, "moved"))
            zhashx_delete (self->pending, reply->request);
    }
    free (code);
    return reply;
}

//  Read one reply from any broker, waiting up to timeout_ms
static act_reply_t *
s_read (act_client_t *self, int timeout_ms)
{
    int64_t deadline = zclock_mono () + (timeout_ms < 0? INT32_MAX: timeout_ms);
    while (true) {
        int64_t left = deadline - zclock_mono ();
        if (left < 0)
            left = 0;
        zsock_t *socket = zpoller_wait (self->poller, (int) left);
        if (!socket)
            return NULL;
        s_link_t *link = zlistx_first (self->links);
        while (link && link->socket != socket)
            link = zlistx_next (self->links);
        zmsg_t *msg = zmsg_recv (socket);
        if (!msg || !link) {
            zmsg_destroy (&msg);
            continue;
        }
        link->dead_until = 0;   //  It answers
        act_reply_t *reply = s_reply_handle (self, link, msg);
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
    //  With several brokers, one that says nothing for a part of the time
    //  allowed is skipped and the request goes to the next
    int64_t patience = zlistx_size (self->links) > 1? self->timeout / 3: self->timeout;
    while (true) {
        int64_t now = zclock_mono ();
        if (now >= deadline)
            return NULL;
        s_pending_t *pending = zhashx_lookup (self->pending, request);
        if (pending && now - pending->sent >= patience && pending->hops < S_MAX_HOPS) {
            pending->link->dead_until = now + S_DEAD_MS;
            s_link_t *next = s_route (self, pending->context, pending->link);
            if (next != pending->link) {
                pending->link = next;
                pending->hops++;
                s_transmit (pending);
            }
        }
        int64_t wait = deadline - now;
        if (pending && pending->sent + patience - now < wait)
            wait = pending->sent + patience - now;
        act_reply_t *reply = s_read (self, (int) (wait > 0? wait: 0));
        if (!reply)
            continue;
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

//  The outcome of call_id if STATUS says it ended (a new reference), or NULL
static json_t *
s_ended (act_client_t *self, const char *call_id)
{
    json_t *status = act_client_status (self, call_id, NULL);
    const char *state = json_string_value (json_object_get (status, "state"));
    json_t *outcome = json_object_get (status, "outcome");
    outcome = state && outcome && !streq (state, "waiting") && !streq (state, "queued")
           && !streq (state, "running")? json_incref (outcome): NULL;
    json_decref (status);
    return outcome;
}

//  Wait for the outcomes of the calls in ids (call ids) submitted by
//  request: from their DONE replies, or, when none comes for a second,
//  from STATUS (a DONE cannot reach this socket when another broker took
//  the context over, or after the broker restarted). Fills outcomes (call
//  id -> outcome); returns 0, or -1 with err set to timeout.
static int
s_outcomes (act_client_t *self, const char *request, json_t *ids, json_t *outcomes,
            act_err_t *err)
{
    int64_t deadline = zclock_mono () + self->timeout;
    int timeout = self->timeout;
    while (json_object_size (outcomes) < json_array_size (ids)) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0) {
            self->timeout = timeout;
            return act_err_set (err, "timeout", "no outcome from the broker in time");
        }
        self->timeout = left < 1000? (int) left: 1000;
        act_reply_t *reply = act_client_wait (self, request, "DONE");
        self->timeout = timeout;
        if (reply) {
            char *id = act_reply_arg (reply, 0);
            char *text = act_reply_arg (reply, 1);
            json_t *outcome = text? act_json_parse (text, strlen (text), err): NULL;
            if (id && outcome && !json_object_get (outcomes, id))
                json_object_set (outcomes, id, outcome);
            json_decref (outcome);
            free (id);
            free (text);
            act_reply_destroy (&reply);
            continue;
        }
        size_t index;
        json_t *id;
        json_array_foreach (ids, index, id)
            if (!json_object_get (outcomes, json_string_value (id))) {
                json_t *outcome = s_ended (self, json_string_value (id));
                if (outcome)
                    json_object_set_new (outcomes, json_string_value (id), outcome);
            }
    }
    return 0;
}

int
act_client_call (act_client_t *self, const char *context, const char *call,
                 bool wait, char **call_id, json_t **outcome, act_err_t *err)
{
    if (outcome)
        *outcome = NULL;
    json_t *parsed = call? act_json_parse (call, strlen (call), NULL): NULL;
    bool has_output = json_object_get (parsed, "_outputPath") != NULL;
    char *text = NULL;
    if (json_is_object (parsed) && zlistx_size (self->links) > 1
    &&  !json_object_get (parsed, "_id")) {
        //  Several brokers: a call sent again to another broker (the first
        //  did not answer) must not run twice; _id makes it the same call
        zuuid_t *uuid = zuuid_new ();
        json_object_set_new (parsed, "_id", json_string (zuuid_str_canonical (uuid)));
        zuuid_destroy (&uuid);
        text = act_json_dump (parsed);
    }
    json_decref (parsed);
    char request [24];
    int rc = act_client_send (self, request, "CALL", context, text? text: call, NULL);
    free (text);
    if (rc)
        return act_err_set (err, "internal", "cannot send to the broker");
    act_reply_t *reply = act_client_wait (self, request, NULL);
    rc = s_check (reply, "ACCEPTED", err);
    char *id = rc == 0? act_reply_arg (reply, 0): NULL;
    act_reply_destroy (&reply);
    if (rc)
        return -1;
    if (wait && has_output && outcome) {
        json_t *ids = json_pack ("[s]", id);
        json_t *outcomes = json_object ();
        rc = s_outcomes (self, request, ids, outcomes, err);
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
    json_t *entries = calls? act_json_parse (calls, strlen (calls), NULL): NULL;
    json_t *waited = json_array ();
    size_t index;
    json_t *entry;
    json_array_foreach (entries, index, entry)
        if (json_object_get (entry, "_outputPath") && json_array_get (*ids, index))
            json_array_append (waited, json_array_get (*ids, index));
    *outcomes = json_object ();
    rc = s_outcomes (self, request, waited, *outcomes, err);
    json_decref (waited);
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
