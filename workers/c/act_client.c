/*  =========================================================================
    act_client - a C client of actd.
    ========================================================================= */

#include <signal.h>
#include <stdarg.h>
#include "actd/act_json.h"
#include "actd/act_wire.h"
#include "act_client_int.h"

//  Several brokers sharing a store (PROTOCOL.md, "moved"): requests about a
//  context go first to the broker rendezvous hashing names, then to the
//  owner a "moved" reply names (the next broker when it names none); a
//  broker that does not answer is skipped for a while and the request
//  goes to the next one.
#define S_MAX_HOPS      5       //  moved replies followed for one request
#define S_DEAD_MS       10000   //  A silent broker is skipped this long

//  A request sent and not answered yet, to send again when moved
typedef struct {
    char *request;              //  Request id
    char *command;              //  Command
    zmsg_t *args;               //  Its argument frames (a copy)
    char *context;              //  Context it is about, or NULL
    act_link_t *link;           //  Broker it was sent to
    int hops;                   //  moved replies followed so far
    int64_t sent;               //  When it was (last) sent
} s_pending_t;

static void
s_reply_free (void **item)
{
    act_reply_destroy ((act_reply_t **) item);
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

//  CZMQ takes SIGINT and SIGTERM the first time it is used (its handler
//  only sets zsys_interrupted): a program embedding a client would no
//  longer stop on SIGTERM, and its waits would end at once after one. So
//  when the client's first socket is what made CZMQ take them, they are
//  given back as the program had them; a program that uses CZMQ's signal
//  handling itself (it used CZMQ first) keeps it.
static void
s_signals_kept (const struct sigaction *before)
{
    struct sigaction now;
    if (sigaction (SIGTERM, NULL, &now) == 0 && now.sa_handler != before->sa_handler)
        zsys_handler_reset ();
}

//  The client of act_client_new, or NULL
static act_client_t *
s_client_new (const char *endpoint)
{
    act_client_t *self = calloc (1, sizeof *self);
    self->links = zlistx_new ();
    zlistx_set_destructor (self->links, act_client_link_destroy);
    self->poller = zpoller_new (NULL);
    self->owners = act_table_new (ACT_CLIENT_ROUTES_KEPT, NULL);
    self->accepted = act_table_new (ACT_CLIENT_ROUTES_KEPT, NULL);
    self->pending = zhashx_new ();
    zhashx_set_destructor (self->pending, s_pending_destroy);
    self->kept = zlistx_new ();
    zlistx_set_destructor (self->kept, s_reply_free);
    self->ready = zlistx_new ();
    zlistx_set_destructor (self->ready, s_reply_free);
    self->awaiting = zhashx_new ();
    //  act_awaiting_t, a plain struct: free () is its destructor
    zhashx_set_destructor (self->awaiting, (zhashx_destructor_fn *) zstr_free);
    self->watches = zhashx_new ();
    self->ignored = act_table_new (ACT_CLIENT_ROUTES_KEPT, act_client_ignored_destroy);
    self->prescribed = json_object ();
    self->timeout = 30000;
    //  No endpoint: the environment's, as actctl reads it (CURVE too)
    if (!endpoint) {
        endpoint = getenv ("ACTD_ENDPOINT");
        if (!endpoint || !*endpoint)
            endpoint = ACT_CLIENT_ENDPOINT;
        if (act_curve_from_env (&self->curve)) {
            act_client_destroy (&self);
            return NULL;
        }
    }
    //  A list of brokers: "tcp://a:5555,tcp://b:5555"
    char *list = strdup (endpoint);
    for (char *item = strtok (list, ", "); item; item = strtok (NULL, ", "))
        if (!act_client_link_add (self, item)) {
            free (list);
            act_client_destroy (&self);
            return NULL;
        }
    free (list);
    if (zlistx_size (self->links) == 0)
        act_client_destroy (&self);
    return self;
}

act_client_t *
act_client_new (const char *endpoint)
{
    struct sigaction before;
    sigaction (SIGTERM, NULL, &before);
    act_client_t *self = s_client_new (endpoint);
    s_signals_kept (&before);
    return self;
}

void
act_client_destroy (act_client_t **self_p)
{
    if (self_p && *self_p) {
        act_client_t *self = *self_p;
        act_watch_orphan (self);
        zhashx_destroy (&self->watches);
        act_table_destroy (&self->ignored);
        zpoller_destroy (&self->poller);
        zhashx_destroy (&self->pending);
        act_table_destroy (&self->owners);
        act_table_destroy (&self->accepted);
        zlistx_destroy (&self->links);
        zlistx_destroy (&self->kept);
        zlistx_destroy (&self->ready);
        zhashx_destroy (&self->awaiting);
        json_decref (self->prescribed);
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

void
act_client_set_connect_timeout (act_client_t *self, int timeout_ms)
{
    self->connect_ms = timeout_ms > 0? timeout_ms: 0;
}

int
act_client_set_curve (act_client_t *self, const char *server_public,
                      const char *certificate_file)
{
    int rc = act_curve_set (&self->curve, server_public, certificate_file);
    if (rc)
        return rc;              //  -2: a bad key, -1: the certificate
    //  The sockets connected already; CURVE must be set before connecting:
    //  connect them again
    zlistx_t *endpoints = zlistx_new ();
    zlistx_set_destructor (endpoints, (zlistx_destructor_fn *) zstr_free);
    for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        zlistx_add_end (endpoints, strdup (link->endpoint));
    zpoller_destroy (&self->poller);
    self->poller = zpoller_new (NULL);
    act_table_purge (self->owners);
    act_table_purge (self->accepted);
    act_table_purge (self->ignored);     //  Their replies went to the old sockets
    zlistx_purge (self->links);
    rc = 0;
    for (char *endpoint = zlistx_first (endpoints); endpoint; endpoint = zlistx_next (endpoints))
        if (!act_client_link_add (self, endpoint))
            rc = -1;
    zlistx_destroy (&endpoints);
    return rc;
}

//  Send pending to its link: [ACTC01][command][request][args...]
static void
s_transmit (s_pending_t *pending)
{
    zmsg_t *msg = zmsg_dup (pending->args);
    zmsg_pushstr (msg, pending->request);
    zmsg_pushstr (msg, pending->command);
    zmsg_pushstr (msg, ACT_CLIENT_HEADER);
    pending->sent = zclock_mono ();
    //  Not sent (no pipe to a broker that refused this client's key): the
    //  request stays pending and times out, or goes to another broker, as
    //  when a broker says nothing
    act_curve_send (pending->link->socket, &msg);
}

//  Send a request made of pending's command and args: route it (to link
//  when given), keep it pending (to send again when moved) and transmit it.
//  An APPEND without a key, with several brokers, may be sent again to
//  another broker (the first did not answer): it gets a random key, kept
//  across its resends, so that actd appends it once (a second APPEND with
//  the key answers the first one's seq). Every sender gets this, the
//  raw act_client_send of actd-http and actctl too. With one broker none
//  is added: a context keeps its keys for good
static void s_take_events (act_client_t *self);

static act_link_t *
s_post (act_client_t *self, char *request, s_pending_t *pending, act_link_t *link)
{
    //  A drop that came while the program was away is a drop before this
    //  request: taken first, it fails only what was sent before it, and
    //  the routing sees the link down
    s_take_events (self);
    if (streq (pending->command, "APPEND") && zmsg_size (pending->args) == 2
    &&  zlistx_size (self->links) > 1) {
        zuuid_t *uuid = zuuid_new ();
        zmsg_addstr (pending->args, zuuid_str_canonical (uuid));
        zuuid_destroy (&uuid);
    }
    snprintf (request, 24, "c%" PRIu64, ++self->sequence);
    pending->request = strdup (request);
    if (!self->first_sent)
        self->first_sent = zclock_mono ();
    //  Which broker: by context, by the broker that accepted the call, or any
    const char *command = pending->command;
    const char *first = zmsg_size (pending->args)? zframe_strdup (zmsg_first (pending->args)): NULL;
    bool by_context = streq (command, "CALL") || streq (command, "PLAN")
                   || streq (command, "APPEND") || streq (command, "RESOLVE")
                   || streq (command, "VIEW") || streq (command, "HISTORY")
                   || streq (command, "WATCH") || streq (command, "DELETE");
    if (by_context && first)
        pending->context = strdup (first);
    act_link_t *accepted = (first && !by_context)? act_table_lookup (self->accepted, first): NULL;
    pending->link = link? link: accepted? accepted: act_client_route (self, pending->context, NULL);
    free ((char *) first);
    zhashx_update (self->pending, request, pending);
    s_transmit (pending);
    return pending->link;
}

int
act_client_send (act_client_t *self, char *request, const char *command, ...)
{
    s_pending_t *pending = calloc (1, sizeof *pending);
    pending->command = strdup (command);
    pending->args = zmsg_new ();
    va_list args;
    va_start (args, command);
    for (const char *arg = va_arg (args, const char *); arg; arg = va_arg (args, const char *))
        zmsg_addstr (pending->args, arg);
    va_end (args);
    s_post (self, request, pending, NULL);
    return 0;
}

act_link_t *
act_client_post (act_client_t *self, char *request, const char *command,
                 const char *a, const char *b, const char *c)
{
    return act_client_post_on (self, NULL, request, command, a, b, c);
}

act_link_t *
act_client_post_on (act_client_t *self, act_link_t *link, char *request, const char *command,
                    const char *a, const char *b, const char *c)
{
    s_pending_t *pending = calloc (1, sizeof *pending);
    pending->command = strdup (command);
    pending->args = zmsg_new ();
    const char *args [] = { a, b, c };
    for (size_t i = 0; i < 3 && args [i]; i++)
        zmsg_addstr (pending->args, args [i]);
    return s_post (self, request, pending, link);
}

//  True when pending is a CALL whose DONE is due after its ACCEPTED (it
//  has _outputPath; text in the call's data may say so too: then the
//  caller gets an ERROR disconnected it did not need, never less)
static bool
s_expects_done (s_pending_t *pending)
{
    if (!streq (pending->command, "CALL") || zmsg_size (pending->args) < 2)
        return false;
    zmsg_first (pending->args);
    char *call = zframe_strdup (zmsg_next (pending->args));
    bool expects = call && strstr (call, "\"_outputPath\"");
    free (call);
    return expects;
}

//  The DONE replies pending will get after its ACCEPTED: 1 for a CALL
//  with _outputPath, one per call with one for a PLAN
static size_t
s_dones_due (s_pending_t *pending)
{
    if (!streq (pending->command, "PLAN") || zmsg_size (pending->args) < 2)
        return s_expects_done (pending)? 1: 0;
    zmsg_first (pending->args);
    zframe_t *frame = zmsg_next (pending->args);
    json_t *calls = json_loadb ((const char *) zframe_data (frame), zframe_size (frame),
                                0, NULL);
    size_t dones = 0, index;
    json_t *call;
    json_array_foreach (calls, index, call)
        dones += json_object_get (call, "_outputPath") != NULL;
    json_decref (calls);
    return dones;
}

void
act_client_ignore (act_client_t *self, const char *request)
{
    s_pending_t *pending = zhashx_lookup (self->pending, request);
    char *closes = pending && streq (pending->command, "UNWATCH") && zmsg_size (pending->args)
                 ? zframe_strdup (zmsg_first (pending->args)): NULL;
    act_client_ignored_add (self, request, pending? pending->link: NULL,
                            pending? s_dones_due (pending): 0, closes);
    free (closes);
    zhashx_delete (self->pending, request);
}

//  True when a request or a DONE still waits on link
static bool
s_link_busy (act_client_t *self, act_link_t *link)
{
    for (s_pending_t *pending = zhashx_first (self->pending); pending;
         pending = zhashx_next (self->pending))
        if (pending->link == link)
            return true;
    for (act_awaiting_t *due = zhashx_first (self->awaiting); due;
         due = zhashx_next (self->awaiting))
        if (due->link == link)
            return true;
    return false;
}

void
act_client_give_up (act_client_t *self, const char *request)
{
    s_pending_t *pending = zhashx_lookup (self->pending, request);
    act_link_t *link = pending? pending->link: NULL;
    act_client_ignore (self, request);
    //  While no connection is up, a request waits in libzmq's queue and
    //  goes out once the broker is back: the caller, told it timed out,
    //  may ask again and have it done twice. With nothing else waiting on
    //  the link (a watch's WATCH is pending too), the socket is opened
    //  anew, which drops that queue. Should the connection come up just
    //  then, the request may still arrive: as the docs say, ask again only
    //  what is safe to repeat
    if (link && !link->up && !s_link_busy (self, link)
    &&  act_client_link_reopen (self, link))
        link->failure = "cannot open a socket again";
}

//  pending was accepted (reply) by link: STATUS and CANCEL of its calls,
//  and requests about its context, start at that broker
static void
s_accepted (act_client_t *self, act_link_t *link, s_pending_t *pending, act_reply_t *reply)
{
    char *ids = act_reply_arg (reply, 0);
    json_t *list = ids && ids [0] == '['? json_loads (ids, 0, NULL): NULL;
    if (list) {
        size_t index;
        json_t *id;
        json_array_foreach (list, index, id)
            if (json_is_string (id))    //  A broker's reply: checked
                act_table_update (self->accepted, json_string_value (id), link);
    }
    else
    if (ids && *ids)
        act_table_update (self->accepted, ids, link);
    json_decref (list);
    free (ids);
    size_t dones = s_dones_due (pending);
    if (dones) {
        act_awaiting_t *due = calloc (1, sizeof *due);
        due->link = link;
        due->dones = dones;
        due->plan = streq (pending->command, "PLAN");
        zhashx_update (self->awaiting, reply->request, due);
    }
    if (pending->context)
        act_table_update (self->owners, pending->context, link);
}

//  True when reply, which is neither pending nor awaited, answers nothing
//  this client waits for: a request it never sent or that has had its
//  replies (a second PONG, a DONE past those due), which a broker does not
//  send. Dropped, as the Python and Node clients drop them: kept for
//  act_client_recv, they would pile up in a program that makes only
//  synchronous calls. The replies of forgotten requests go on to
//  act_client_ignored_take, and a watch's EVENTs to its watch
static bool
s_stray (act_client_t *self, act_reply_t *reply)
{
    return !zhashx_lookup (self->watches, reply->request)
        && !act_table_lookup (self->ignored, reply->request);
}

//  A reply as the caller sees it, or NULL when it was handled here (a
//  moved reply followed by sending the request again)
static act_reply_t *
s_reply_handle (act_client_t *self, act_link_t *link, zmsg_t *msg)
{
    act_reply_t *reply = act_reply_decode (&msg);
    if (!reply)
        return NULL;
    act_awaiting_t *due = zhashx_lookup (self->awaiting, reply->request);
    s_pending_t *pending = zhashx_lookup (self->pending, reply->request);
    if (!pending && !due && s_stray (self, reply)) {
        act_reply_destroy (&reply);
        return NULL;
    }
    if (due && streq (reply->verb, "DONE") && --due->dones == 0)
        zhashx_delete (self->awaiting, reply->request);
    char *code = streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
    if (pending && code && streq (code, "moved") && pending->hops < S_MAX_HOPS) {
        //  Another broker owns the context: send the request there. One
        //  that names none (cut off from the database, it knew no live
        //  broker) leaves the choice here: the next broker, as after a
        //  timeout, never the one that answered
        char *owner = act_reply_arg (reply, 1);
        act_link_t *target = owner && *owner? act_client_link_add (self, owner): NULL;
        if (!owner || !*owner) {
            target = act_client_route (self, pending->context, link);
            target = target == link? NULL: target;
        }
        if (target) {
            if (pending->context)
                act_table_update (self->owners, pending->context, target);
            pending->link = target;
            pending->hops++;
            act_client_id_moved (pending->command, pending->args);
            s_transmit (pending);
            act_watch_moved (self, reply->request, target);
            act_reply_destroy (&reply);
        }
        free (owner);
    }
    else
    if (pending && streq (reply->verb, "ACCEPTED"))
        s_accepted (self, link, pending, reply);
    //  Its reply, the caller's to see (a moved that was not followed: its
    //  endpoint is not valid, or S_MAX_HOPS were): no longer pending
    if (pending && reply)
        zhashx_delete (self->pending, reply->request);
    free (code);
    return reply;
}

//  Queue the library's own ERROR reply to request, of code (one of the
//  library's), with a message made of format
static void
s_lost (act_client_t *self, const char *code, const char *request, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *message = zsys_vprintf (format, args);
    va_end (args);
    zlistx_add_end (self->ready, act_reply_error (request, code, message));
    zstr_free (&message);
}

//  link's connection dropped: the requests sent on it and not answered
//  are lost with it (libzmq forgets what it wrote to the connection, and
//  the broker's replies go to a routing id that is gone). With several
//  brokers each goes to the next, as when a broker is silent; otherwise
//  each gets an ERROR disconnected now, for act_client_read to return
//  (no reply can come any more). A watch's own WATCH is no
//  caller's request: it is forgotten without a word, and the watch is
//  sent again to another broker, or once the link is back
//  (act_watch_link_event)
static void
s_link_lost (act_client_t *self, act_link_t *link)
{
    act_client_ignored_lost (self, link);
    zlistx_t *requests = zlistx_new ();
    zlistx_t *watches = zlistx_new ();
    for (s_pending_t *pending = zhashx_first (self->pending); pending;
         pending = zhashx_next (self->pending))
        if (pending->link == link)
            zlistx_add_end (zhashx_lookup (self->watches, pending->request)? watches: requests,
                            pending);
    for (s_pending_t *pending = zlistx_first (watches); pending;
         pending = zlistx_next (watches))
        zhashx_delete (self->pending, pending->request);
    if ((zlistx_size (requests) || zlistx_size (watches)) && zlistx_size (self->links) > 1)
        link->dead_until = zclock_mono () + S_DEAD_MS;
    zlistx_destroy (&watches);
    for (s_pending_t *pending = zlistx_first (requests); pending;
         pending = zlistx_next (requests)) {
        act_link_t *next = zlistx_size (self->links) > 1 && pending->hops < S_MAX_HOPS
                         ? act_client_route (self, pending->context, link): link;
        if (next != link) {
            pending->link = next;
            pending->hops++;
            s_transmit (pending);
            continue;
        }
        //  Its replies, should any come (a drop read late, after the
        //  request went out on the next connection), are dropped as late
        const char *request = pending->request;
        s_lost (self, ACT_CLIENT_DISCONNECTED, request, "the connection to %s dropped before "
                "the reply: the request may or may not have been carried out", link->endpoint);
        act_client_ignore (self, request);          //  Frees request: last
    }
    zlistx_destroy (&requests);
    //  Accepted calls whose DONE was due on it: it is lost (DONE goes to
    //  the socket identity that submitted them); STATUS tells their state.
    //  A CALL's caller gets an ERROR disconnected; a PLAN's DONEs stop
    zlistx_t *calls = zlistx_new ();
    zlistx_set_destructor (calls, (zlistx_destructor_fn *) zstr_free);
    for (act_awaiting_t *due = zhashx_first (self->awaiting); due;
         due = zhashx_next (self->awaiting))
        if (due->link == link)
            zlistx_add_end (calls, strdup (zhashx_cursor (self->awaiting)));
    for (const char *request = zlistx_first (calls); request; request = zlistx_next (calls)) {
        act_awaiting_t *due = zhashx_lookup (self->awaiting, request);
        if (!due->plan)
            s_lost (self, ACT_CLIENT_DISCONNECTED, request, "the connection to %s dropped "
                    "before the DONE of this accepted call: ask STATUS", link->endpoint);
        zhashx_delete (self->awaiting, request);
    }
    zlistx_destroy (&calls);
}

//  With a bound on the wait for a first connection
//  (act_client_set_connect_timeout): the milliseconds left of it, or -1
//  when none applies (no bound, a broker was connected once, or the time
//  is up). Once it is up, every request waiting for its reply gets an
//  ERROR ACT_CLIENT_UNREACHABLE saying why, from the connection events of
//  its broker, and is forgotten as one that timed out (libzmq keeps it
//  queued). Watches keep waiting: they are sent again once a broker is
//  there
static int64_t
s_unreachable (act_client_t *self)
{
    if (!self->connect_ms || self->connected || !self->first_sent)
        return -1;
    int64_t left = self->first_sent + self->connect_ms - zclock_mono ();
    if (left > 0)
        return left;
    zlistx_t *requests = zlistx_new ();
    for (s_pending_t *pending = zhashx_first (self->pending); pending;
         pending = zhashx_next (self->pending))
        if (!zhashx_lookup (self->watches, pending->request))
            zlistx_add_end (requests, pending);
    for (s_pending_t *pending = zlistx_first (requests); pending;
         pending = zlistx_next (requests)) {
        act_link_t *link = pending->link;
        s_lost (self, ACT_CLIENT_UNREACHABLE, pending->request,
                "no connection to %s in %d ms: %s", link->endpoint, self->connect_ms,
                link->failure? link->failure: "no answer (a firewall, or a host that is down?)");
        act_client_give_up (self, pending->request);
    }
    zlistx_destroy (&requests);
    return -1;
}

//  A reply the caller should see, or NULL when it was taken here: by a
//  watch, or dropped as the reply to a request this client forgot
static act_reply_t *
s_sort (act_client_t *self, act_link_t *link, act_reply_t *reply)
{
    if (act_client_ignored_take (self, &reply))
        ;                       //  Dropped: a request this client forgot
    else
    if (act_watch_intake (self, link, reply)) {
        reply = NULL;           //  Queued on its watch (or dropped)
        self->woke = true;
    }
    return reply;
}

//  The replies that came on link's connection before it dropped and are
//  still unread: libzmq keeps them readable after its DISCONNECTED event,
//  and each answers its request, which the drop must then not fail. They
//  go to the list act_client_read returns first, before the drop's own
//  ERRORs (s_link_lost)
static void
s_link_drain (act_client_t *self, act_link_t *link)
{
    while (zsock_events (link->socket) & ZMQ_POLLIN) {
        zmsg_t *msg = zmsg_recv (link->socket);
        if (!msg)
            break;
        act_reply_t *reply = s_reply_handle (self, link, msg);
        reply = reply? s_sort (self, link, reply): NULL;
        if (reply)
            zlistx_add_end (self->ready, reply);
    }
}

//  A connection event of link's DEALER (zmq_socket_monitor: the event
//  number in the first two bytes of the first frame)
static void
s_link_event (act_client_t *self, act_link_t *link)
{
    zmsg_t *msg = zmsg_recv (link->monitor);
    zframe_t *frame = msg? zmsg_first (msg): NULL;
    if (frame && zframe_size (frame) >= 2) {
        uint16_t event;
        memcpy (&event, zframe_data (frame), sizeof event);
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            link->up = self->connected = true;
            link->failure = NULL;
        }
        else
        if (event == ZMQ_EVENT_DISCONNECTED && link->up) {
            link->up = false;
            s_link_drain (self, link);
            s_link_lost (self, link);
        }
        else
        if (event == ZMQ_EVENT_DISCONNECTED) {
            //  A connection that never completed its handshake carried no
            //  request: they wait for the next (libzmq keeps them queued)
            if (!link->failure)
                link->failure = "the connection closed at the handshake";
        }
        else
        if (event == ZMQ_EVENT_CONNECT_RETRIED && !link->failure)
            link->failure = "refused: is actd listening there?";
        else
        if (event != ZMQ_EVENT_CONNECT_RETRIED)
            //  A broker of another CURVE key (or without CURVE, or with it
            //  where this client has none) ends the handshake
            link->failure = "the handshake failed: are both ends on CURVE, "
                            "with the broker's public key?";
        if (event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            act_watch_link_event (self, link, event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    }
    zmsg_destroy (&msg);
}

//  Take every connection event that came and was not read yet (each
//  lookup starts again: handling one walks the links too)
static void
s_take_events (act_client_t *self)
{
    act_link_t *link;
    while ((link = act_client_link_with_events (self)))
        s_link_event (self, link);
}

act_reply_t *
act_client_read (act_client_t *self, int timeout_ms)
{
    int64_t deadline = zclock_mono () + (timeout_ms < 0? INT32_MAX: timeout_ms);
    self->woke = false;
    while (!self->woke) {
        int64_t unreachable = s_unreachable (self);
        act_reply_t *ready = zlistx_first (self->ready);
        if (ready) {
            zlistx_detach_cur (self->ready);
            return ready;
        }
        int64_t left = deadline - zclock_mono ();
        if (left < 0)
            left = 0;
        int check = act_watch_check (self);
        if (check >= 0 && check < left)
            left = check;
        if (unreachable >= 0 && unreachable < left)
            left = unreachable;
        zsock_t *socket = zpoller_wait (self->poller, (int) left);
        if (!socket && zpoller_expired (self->poller) && zclock_mono () < deadline)
            continue;           //  Time to look at the watches again
        if (!socket)
            return NULL;
        if (socket == self->wakeup)
            return NULL;        //  Not read: the caller's own socket
        act_link_t *link = zlistx_first (self->links);
        while (link && link->socket != socket && link->monitor != socket)
            link = zlistx_next (self->links);
        if (link && socket == link->monitor) {
            s_link_event (self, link);
            continue;
        }
        //  The connection's events came before its messages: those still
        //  unread go first (the poller gave the socket before its monitor,
        //  and a PONG left the client saying it was not connected)
        while (link && link->monitor && (zsock_events (link->monitor) & ZMQ_POLLIN))
            s_link_event (self, link);
        //  A drop among them read the socket's messages (s_link_drain)
        if (!(zsock_events (socket) & ZMQ_POLLIN))
            continue;
        zmsg_t *msg = zmsg_recv (socket);
        if (!msg || !link) {
            zmsg_destroy (&msg);
            continue;
        }
        link->dead_until = 0;   //  It answers
        act_reply_t *reply = s_reply_handle (self, link, msg);
        reply = reply? s_sort (self, link, reply): NULL;
        if (reply)
            return reply;
    }
    return NULL;
}

act_reply_t *
act_client_recv (act_client_t *self, int timeout_ms)
{
    act_reply_t *reply = zlistx_first (self->kept);
    if (reply) {
        zlistx_detach_cur (self->kept);
        return reply;
    }
    int64_t deadline = zclock_mono () + (timeout_ms < 0? INT32_MAX: timeout_ms);
    while (true) {
        int64_t left = deadline - zclock_mono ();
        reply = act_client_read (self, (int) (left > 0? left: 0));
        if (reply || !self->woke)
            return reply;       //  A reply, or the time is up
    }
}

void
act_client_set_wakeup (act_client_t *self, zsock_t *socket)
{
    self->wakeup = socket;
}

act_reply_t *
act_client_poll (act_client_t *self, int timeout_ms)
{
    act_reply_t *reply = zlistx_first (self->kept);
    if (reply) {
        zlistx_detach_cur (self->kept);
        return reply;
    }
    //  The wakeup socket is polled here only: the synchronous calls must
    //  not spin on a socket they do not read
    if (self->wakeup)
        zpoller_add (self->poller, self->wakeup);
    reply = act_client_read (self, timeout_ms);
    if (self->wakeup)
        zpoller_remove (self->poller, self->wakeup);
    return reply;
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
        //  With several brokers, one that says nothing for a part of the
        //  time allowed is skipped and the request goes to the next. Asked
        //  at each turn: a moved reply may have added the second broker
        //  (a dead owner's, while its lease runs out)
        int64_t patience = zlistx_size (self->links) > 1? self->timeout / 3: self->timeout;
        int64_t now = zclock_mono ();
        if (now >= deadline) {
            act_client_forget (self, request);
            return NULL;
        }
        s_pending_t *pending = zhashx_lookup (self->pending, request);
        if (pending && now - pending->sent >= patience && pending->hops < S_MAX_HOPS) {
            pending->link->dead_until = now + S_DEAD_MS;
            act_link_t *next = act_client_route (self, pending->context, pending->link);
            if (next != pending->link) {
                pending->link = next;
                pending->hops++;
                s_transmit (pending);
            }
        }
        int64_t wait = deadline - now;
        if (pending && pending->sent + patience - now < wait)
            wait = pending->sent + patience - now;
        //  A read goes on past a moved reply it handles: a third of the
        //  time allowed at most, so that the patience is asked again
        if (wait > self->timeout / 3 + 1)
            wait = self->timeout / 3 + 1;
        act_reply_t *reply = act_client_read (self, (int) (wait > 0? wait: 0));
        if (!reply)
            continue;
        if (streq (reply->request, request) && (!verb || streq (reply->verb, verb)))
            return reply;
        zlistx_add_end (self->kept, reply);
    }
}
