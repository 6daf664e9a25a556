/*  =========================================================================
    act_client_int - what act_client.c (requests, brokers, replies) and
    act_client_watch.c (watches, waiting for calls) share; private to
    libactd.
    ========================================================================= */

#ifndef ACT_CLIENT_INT_H_INCLUDED
#define ACT_CLIENT_INT_H_INCLUDED

#include "actd/act_client.h"
#include "act_curve_int.h"

//  One broker: a DEALER connected to it, and the monitor that says when
//  its connection drops and comes back (a broker that restarted has
//  forgotten the watches: they are sent again)
typedef struct {
    char *endpoint;             //  Its client endpoint
    zsock_t *socket;            //  DEALER to it
    zsock_t *monitor;           //  PAIR receiving the DEALER's connection events
    int64_t dead_until;         //  Skipped until then (it did not answer)
    bool up;                    //  Connected: a handshake succeeded, and the
                                //  connection has not dropped since
    const char *failure;        //  Why its last try to connect failed (a
                                //  constant), or NULL
    unsigned opened;            //  Sockets opened for it so far (each
                                //  monitor's inproc name differs)
} act_link_t;

//  Milliseconds a TOOLS <activity> answer is used for by act_client_call
//  and act_client_plan with wait (whether the tool prescribes an output path)
#define ACT_CLIENT_PRESCRIBED_MS 2000

//  Milliseconds act_client_destroy waits at most for the OK of the UNWATCH
//  it sends for each open watch (a broker that is gone costs no more)
#define ACT_CLIENT_UNWATCH_MS 200

//  Entries kept at most in each of a client's tables of routes (owners,
//  accepted) and of ignored requests, the oldest going first: as the
//  Python library's ROUTES_KEPT
#define ACT_CLIENT_ROUTES_KEPT 10000

//  A table keyed by strings that keeps at most its limit of entries, the
//  oldest (the least recently updated) going first (act_client_table.c)
typedef struct _act_table_t act_table_t;

//  A new table keeping at most limit entries; destructor (NULL: none)
//  frees an item when its entry goes.
act_table_t *act_table_new (size_t limit, zhashx_destructor_fn *destructor);

//  Destroy the table and its items, and null the pointer; safe on NULL.
void act_table_destroy (act_table_t **self_p);

//  The item of key, or NULL.
void *act_table_lookup (act_table_t *self, const char *key);

//  Set key's item (replacing and freeing any), as the newest entry; the
//  oldest go while there are more than the limit.
void act_table_update (act_table_t *self, const char *key, void *item);

//  Remove key's entry (its item freed), if any.
void act_table_delete (act_table_t *self, const char *key);

//  Remove every entry.
void act_table_purge (act_table_t *self);

//  Number of entries.
size_t act_table_size (act_table_t *self);

//  A copy of the keys, oldest first (a new list the caller destroys), to
//  walk the table while it changes.
zlistx_t *act_table_keys (act_table_t *self);

//  Keep at most limit entries from the next update on (tests make it small).
void act_table_set_limit (act_table_t *self, size_t limit);

//  An accepted CALL or PLAN (sent with act_client_send) whose DONE replies
//  are still due
typedef struct {
    act_link_t *link;           //  Broker that accepted it: its DONEs come from it
    size_t dones;               //  DONE replies still due
    bool plan;                  //  A PLAN: a dropped link makes no ERROR for it
} act_awaiting_t;

struct _act_client_t {
    zlistx_t *links;            //  act_link_t, the endpoints given, then learned
    zpoller_t *poller;          //  Polls every link's socket and monitor
    act_table_t *owners;        //  Context -> act_link_t learned from moved
                                //  or ACCEPTED (ACT_CLIENT_ROUTES_KEPT at most)
    act_table_t *accepted;      //  Call id -> act_link_t that accepted it
                                //  (ACT_CLIENT_ROUTES_KEPT at most)
    zhashx_t *pending;          //  Request id -> s_pending_t
    zlistx_t *kept;             //  act_reply_t received but not yet taken
    zlistx_t *ready;            //  act_reply_t for act_client_read to return
                                //  before it reads a socket: the replies read
                                //  as their connection dropped, then the
                                //  ERROR disconnected of each request that
                                //  it dropped under
    zhashx_t *awaiting;         //  Request id of an accepted CALL or PLAN
                                //  whose DONEs are due -> act_awaiting_t
    zhashx_t *watches;          //  Request id of its WATCH -> act_watch_t
    act_table_t *ignored;       //  Request id -> s_ignored_t: requests whose
                                //  replies are dropped (old WATCHes,
                                //  UNWATCHes, DONEs nobody waits for),
                                //  until their last (ACT_CLIENT_ROUTES_KEPT
                                //  at most)
    json_t *prescribed;         //  Activity -> [until (zclock_mono), path or null]:
                                //  TOOLS answers, kept ACT_CLIENT_PRESCRIBED_MS
    bool woke;                  //  An event was queued on a watch
    int64_t watch_check;        //  When act_watch_check looks at the watches next
    int timeout;                //  Milliseconds a synchronous request waits
    int connect_ms;             //  Milliseconds requests wait for a first
                                //  connection to any broker (0: no bound)
    int64_t first_sent;         //  When the first request was sent, or 0
    bool connected;             //  A handshake with a broker succeeded once
    uint64_t sequence;          //  Makes request ids
    act_curve_t curve;          //  CURVE: the broker's key, this client's certificate
    zsock_t *wakeup;            //  act_client_poll returns when it is readable, or NULL
};

//  Send command with up to three args (NULL ends them) as act_client_send
//  does; returns the broker it went to.
act_link_t *act_client_post (act_client_t *self, char *request, const char *command,
                             const char *a, const char *b, const char *c);

//  The same, sent to link (NULL: routed as act_client_post routes it): a
//  request about another that a given broker holds, as UNWATCH is.
act_link_t *act_client_post_on (act_client_t *self, act_link_t *link, char *request,
                                const char *command, const char *a, const char *b,
                                const char *c);

//  Forget a request: no longer sent again when moved, its replies dropped
//  until the last it can get (its final reply, its DONEs after ACCEPTED;
//  for an UNWATCH, the WATCH it closes is forgotten with it).
void act_client_ignore (act_client_t *self, const char *request);

//  act_client_ignore for a request given up (its wait timed out, or no
//  connection came in time); when its link is down and nothing else waits
//  on it, the link's socket is opened anew, so that libzmq's queue, which
//  holds the request until the broker is back, is dropped with it.
void act_client_give_up (act_client_t *self, const char *request);

//  From act_client_ignored.c: forget the dones DONE replies (none:
//  nothing) still due to request, accepted on link, whose pending entry
//  is gone: dropped as they come, and no ERROR disconnected made for them
//  when link drops.
void act_client_ignore_dones (act_client_t *self, const char *request, act_link_t *link,
                              size_t dones);

//  Forget request, sent to link (NULL: not known): its replies are
//  dropped until its last, after dones DONEs (0: its first reply other
//  than EVENT); closes, when not NULL, is the WATCH an UNWATCH closes,
//  forgotten when it ends.
void act_client_ignored_add (act_client_t *self, const char *request, act_link_t *link,
                             size_t dones, const char *closes);

//  The destructor of self->ignored's items.
void act_client_ignored_destroy (void **item);

//  link's connection dropped: the requests forgotten on it can no longer
//  be answered (a connection made again is a new routing id to the
//  broker, whose ROUTER drops the replies to the old one), so they are
//  forgotten for good, with the WATCH an UNWATCH among them closed.
void act_client_ignored_lost (act_client_t *self, act_link_t *link);

//  True, with the reply destroyed and *reply_p NULL, when it answers a
//  request this client forgot (counting it towards that one's last).
bool act_client_ignored_take (act_client_t *self, act_reply_t **reply_p);

//  From act_client_commands.c: forget request, whose wait timed out, as
//  a synchronous request that timed out is: its replies kept so far are
//  dropped, and those still due (its reply, the DONEs of an accepted CALL
//  or PLAN) are dropped as they come, so that a client that gives up on
//  requests does not grow.
void act_client_forget (act_client_t *self, const char *request);

//  One reply from any broker, waiting up to timeout_ms; NULL on timeout,
//  and sooner when an event was queued on a watch (self->woke).
act_reply_t *act_client_read (act_client_t *self, int timeout_ms);

//  From act_client_link.c: destroy a link (a zlistx destructor: nulls
//  *item; closes its socket and its monitor).
void act_client_link_destroy (void **item);

//  From act_client_link.c: the link to endpoint, connected now (with CURVE
//  when set) unless the client has one; NULL when endpoint is not valid.
act_link_t *act_client_link_add (act_client_t *self, const char *endpoint);

//  From act_client_link.c: close link's socket, dropping what libzmq
//  still queues for its broker, and open a new one to the same endpoint
//  (a new connection, a new routing id). Returns 0, or -1 if it fails.
int act_client_link_reopen (act_client_t *self, act_link_t *link);

//  From act_client_link.c: a link with a connection event not yet read, or
//  NULL.
act_link_t *act_client_link_with_events (act_client_t *self);

//  From act_client_route.c: the broker for a request about key (a
//  context, or NULL): the owner learned from moved, else the live link
//  with the highest rendezvous score (ties: the smaller endpoint),
//  skipping avoid; any link but avoid when none is live.
act_link_t *act_client_route (act_client_t *self, const char *key, act_link_t *avoid);

//  The reply in msg's frames ([header][verb][request][args...]), taking
//  msg (nulled); NULL, msg destroyed, when they are not a reply.
act_reply_t *act_reply_decode (zmsg_t **msg_p);

//  A reply of the library's own to request: ERROR code message.
act_reply_t *act_reply_error (const char *request, const char *code, const char *message);

//  The message of a moved that names no broker, as the caller sees it
#define ACT_CLIENT_MOVED_NOWHERE "the broker no longer serves the context (cut off from its store) and named no other broker"

//  The reply's verb must be expected; an ERROR or a timeout sets err.
int act_client_check (act_reply_t *reply, const char *expected, act_err_t *err);

//  From act_client_commands.c: args are command's about to be sent to a
//  second broker after a moved reply (which stored nothing): a CALL's
//  call ([context][call]) without an _id gets a random one, an APPEND
//  ([context][message]) without a key a random key, so that sending it
//  again to a third (the owner silent) cannot run or append it twice.
void act_client_id_moved (const char *command, zmsg_t *args);

//  From act_client_watch.c: wait for the outcomes of the calls in ids
//  (call ids of context) submitted by request, from their DONE replies or
//  a watch of context. Fills outcomes (call id -> outcome); returns 0, or
//  -1 with err set (timeout; the watch refused; the context deleted).
//  Either way, request's DONEs not read by then are dropped as they come.
int act_client_outcomes (act_client_t *self, const char *request, const char *context,
                         json_t *ids, json_t *outcomes, act_err_t *err);

//  From act_client_watch.c: take reply if it belongs to a watch (an EVENT,
//  or the ERROR that refused a WATCH); true when it was taken.
bool act_watch_intake (act_client_t *self, act_link_t *link, act_reply_t *reply);

//  From act_client_watch.c: link's connection dropped (up false) or was
//  made again (up true): the watches on it are sent again at once to
//  another broker when the client knows several, else once it is back.
void act_watch_link_event (act_client_t *self, act_link_t *link, bool up);

//  From act_client_watch.c: request, a watch's WATCH, was sent on to
//  link by a moved reply: the watch is there now.
void act_watch_moved (act_client_t *self, const char *request, act_link_t *link);

//  From act_client_watch.c: with several brokers, a watch whose WATCH has
//  waited a third of the client's timeout on a broker that is not
//  connected (a dead owner a moved reply named) is sent to another.
//  Returns the milliseconds until it should be called again, -1: not
//  before something changes (one broker, no watch, every link up).
int act_watch_check (act_client_t *self);

//  From act_client_watch.c: the client is going: each open watch is sent
//  UNWATCH and their OK awaited ACT_CLIENT_UNWATCH_MS at most (not at all
//  when none is open), then the watches are left without it
//  (act_watch_next then fails).
void act_watch_orphan (act_client_t *self);

#endif
