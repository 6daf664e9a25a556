/*  =========================================================================
    act_client - a C client of actd (PROTOCOL.md section 1).

    One DEALER socket per broker; requests may be pipelined:
    act_client_send returns at once and replies are matched by request id.
    The synchronous calls (act_client_call, _append, _resolve, ...) wait
    for their own reply and keep any other reply that arrives meanwhile for
    act_client_recv; the events of a watch (act_client_watch) are kept for
    act_watch_next.

    Not thread-safe: use one client per thread.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_CLIENT_H_INCLUDED
#define ACT_CLIENT_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include "act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_client_t act_client_t;

//  One reply from the broker
typedef struct {
    char *verb;                 //  ACCEPTED, DONE, OK, VALUE, PONG or ERROR
    char *request;              //  The request id it answers
    zmsg_t *args;               //  The frames after the request id
} act_reply_t;

//  Default client endpoint (PROTOCOL.md section 5)
#define ACT_CLIENT_ENDPOINT "tcp://127.0.0.1:5555"

//  Connect to the broker at endpoint (several: "tcp://a:5555,tcp://b:5555").
//  With endpoint NULL, the environment decides, as for actctl: the
//  endpoints of $ACTD_ENDPOINT (else ACT_CLIENT_ENDPOINT), and CURVE when
//  $ACTD_SERVER_KEY (the broker's public key) and $ACTD_CERT (this
//  client's certificate file) are set. Returns NULL if an endpoint is not
//  valid (a tcp:// one whose port is not 1 to 65535 included), or (endpoint NULL) if only one of the two variables is set,
//  $ACTD_SERVER_KEY is not a CURVE public key or the certificate does not
//  load. Connecting is asynchronous: nothing
//  waits for the broker. Signals stay as the program had them: CZMQ's
//  handler of SIGINT and SIGTERM, which the first CZMQ socket installs, is
//  removed again unless the program used CZMQ before (and so chose it).
act_client_t *act_client_new (const char *endpoint);

//  Close the connection and null the pointer; safe on NULL. Each watch
//  still open is sent UNWATCH first (actd frees its slot of max_watches
//  at once, rather than at its context's next event), best effort: their
//  OK is awaited 200 ms at most, not at all when no watch is open, so a
//  broker that is gone or slow delays it no longer.
void act_client_destroy (act_client_t **self_p);

//  How long a synchronous request waits for its reply (default 30 000 ms).
//  A request that timed out (in act_client_wait, act_client_call, _append,
//  _ping, ...) is forgotten: its late reply, and the DONE of a call whose
//  outcome was not waited for to the end, are dropped as they come, never
//  kept for act_client_recv.
void act_client_set_timeout (act_client_t *self, int timeout_ms);

//  Bound how long requests wait while no broker has ever been reached
//  (default 0: no bound, only act_client_set_timeout's). Once timeout_ms
//  have passed since the client's first request with no handshake done
//  with any broker, each request waiting for its reply, and each sent
//  after, gets an ERROR ACT_CLIENT_UNREACHABLE whose message says what the
//  connection attempts saw: refused (nothing listens), a handshake that
//  failed (CURVE keys that do not match), or no answer. Such a request is
//  forgotten as one that timed out: it stays queued for its broker, which
//  may still carry it out if it comes up while the client lives (its
//  replies are dropped). A client that was connected once is never
//  bounded so (a broker restarting is waited for). Watches are not
//  bounded: they are sent once a broker is there.
void act_client_set_connect_timeout (act_client_t *self, int timeout_ms);

//  Use CURVE: the broker's public key and this client's certificate (see
//  actctl keygen). Call before the first request. Returns 0; -2 (nothing
//  changed) if server_public is not a CURVE public key (40 characters of
//  Z85 that decode); -1 if the certificate does not load, errno set: the
//  error opening it, or EINVAL when it is not a certificate with both keys.
//  It is read as actd reads its own key, never blocking: only a regular
//  file of at most 64 KiB (a FIFO there hung the caller in CZMQ's
//  zcert_load), and certificate_file_secret when it can be opened, else
//  certificate_file itself; its secret half is required.
int act_client_set_curve (act_client_t *self, const char *server_public,
                          const char *certificate_file);

//  The code of the ERROR this library makes for a request sent on a
//  connection that dropped before its reply came (a broker restarted, or
//  silent past the ZMTP heartbeat timeout): the broker may or may not have
//  carried it out, and its reply, if any, is lost.
#define ACT_CLIENT_DISCONNECTED "disconnected"

//  The code of the ERROR this library makes for a request when no broker
//  was reached within act_client_set_connect_timeout.
#define ACT_CLIENT_UNREACHABLE "unreachable"

//  Whether a broker is connected now: a handshake with one succeeded and
//  its connection has not dropped since, as the connection events read so
//  far say (they are read while the client waits for replies: in
//  act_client_poll, act_client_recv, the synchronous calls). When none is
//  and why is not NULL, *why is what the last attempts to connect saw (a
//  constant: "refused: is actd listening there?", a handshake that
//  failed), or NULL when they saw nothing yet. A connection comes back by
//  itself (libzmq tries again every 100 ms): false says where things
//  stood at the last event, not that the next request cannot be
//  delivered, as it is once a broker is there.
bool act_client_connected (act_client_t *self, const char **why);

//  The rendezvous score of the broker at endpoint for key (a context id),
//  as every actd client library computes it (docs/protocol.md section 12):
//  the brokers ranked by it, highest first, are where a key's requests
//  go. FNV-1a (64 bits) of endpoint "\n" key, then MurmurHash3's 64-bit
//  finalizer (FNV-1a alone mixes its last bytes into the high bits too
//  little: the endpoint would decide every key).
uint64_t act_client_score (const char *endpoint, const char *key);

//  Send a request without waiting: command, then args (strings, ended by
//  NULL). Writes the request id into request (at least 24 bytes). Returns
//  0. A request still unanswered when its connection drops gets an ERROR
//  ACT_CLIENT_DISCONNECTED reply, made here, and any late reply is dropped
//  (with several brokers it goes to the next instead); so does an accepted
//  CALL with _outputPath whose DONE was due on it (STATUS tells the rest).
//  A request that cannot be queued (a broker that refused this client's
//  CURVE key) is treated as one the broker did not answer: waiting for it
//  times out, or it goes to another broker. An APPEND of two args (no
//  key) gets a random key when the client knows several brokers, as
//  act_client_append_key says.
int act_client_send (act_client_t *self, char *request, const char *command, ...);

//  The next reply not yet taken, waiting up to timeout_ms (-1: forever).
//  Returns NULL on timeout. A reply that answers nothing the client waits
//  for (a request it never sent, or one that has had all its replies) is
//  dropped as it comes, never returned.
act_reply_t *act_client_recv (act_client_t *self, int timeout_ms);

//  A socket of the caller's (NULL: none) that act_client_poll also waits
//  on, for a program that serves the broker and its own socket in one
//  loop. It is never read here.
void act_client_set_wakeup (act_client_t *self, zsock_t *socket);

//  Wait up to timeout_ms (-1: forever) for anything: returns the next
//  reply not yet taken, or NULL on timeout and as soon as an event was
//  queued on a watch (act_watch_next (watch, 0, ...) takes it) or the
//  wakeup socket is readable.
act_reply_t *act_client_poll (act_client_t *self, int timeout_ms);

//  The reply to request (with verb, if not NULL), waiting up to the
//  client's timeout; other replies are kept. NULL on timeout, and then
//  request is forgotten: the replies to it kept meanwhile (another verb)
//  and those still due (its reply; the DONEs of an accepted CALL or PLAN)
//  are dropped, never returned, as the other libraries drop a late reply.
//  To wait longer, set a longer timeout first, or take replies with
//  act_client_recv or act_client_poll, which forget nothing.
//  A request that timed out may or may not have been carried out. One
//  sent while no connection was up waits in libzmq's queue: when nothing
//  else waits on that broker as it times out, the client opens its socket
//  anew, which drops the queue; otherwise, or should the connection come
//  up just then, it may still arrive later. Ask again only what is safe to
//  repeat (reads; APPEND with a key; CALL with an _id).
act_reply_t *act_client_wait (act_client_t *self, const char *request, const char *verb);

//  Destroy a reply and null the pointer; safe on NULL.
void act_reply_destroy (act_reply_t **self_p);

//  Frame index (0 = first after the request id) of a reply as a string
//  the caller frees, or NULL.
char *act_reply_arg (act_reply_t *self, size_t index);

//  CALL: submit call (JSON text) in context. Sets *call_id (caller frees;
//  NULL when it fails: bad_frame for an ACCEPTED without its call id).
//  With wait and an _outputPath, waits for DONE and sets *outcome (a new
//  reference). With wait (and outcome not NULL) and no _outputPath, asks
//  TOOLS <activity> whether the call's tool prescribes an output path
//  ("outputPath": {"const": ...}; the answer is kept 2 s per client and
//  activity, ACT_CLIENT_PRESCRIBED_MS): when it does, the call is sent with
//  that _outputPath and *outcome is set as above; otherwise *outcome stays
//  NULL (fire-and-forget). A DONE not waited for here (without wait, or
//  outcome NULL) is dropped as it comes: it never reaches act_client_recv
//  (act_client_wait_call waits for such a call). A call without an _id
//  gets a random one when the client knows several brokers, or when a
//  moved reply sends it on to the owner (docs/protocol.md section 12): a
//  retry elsewhere is then the same call. Returns 0, or -1 with
//  err set: the broker's
//  ERROR code and message (of TOOLS too; bad_call when the registry
//  prescribes another path by the time the call arrives), "timeout", or,
//  while waiting for an accepted call's end, not_found when STATUS says
//  the broker no longer knows it (it came back without its store).
int act_client_call (act_client_t *self, const char *context, const char *call,
                     bool wait, char **call_id, json_t **outcome, act_err_t *err);

//  PLAN: submit an array of calls (JSON text). Sets *ids (a new array of
//  call ids); with wait, waits for every DONE and sets *outcomes (an
//  object: call id -> outcome of each call with an output path; a call
//  without one whose tool prescribes one is given it first, as
//  act_client_call does). Without wait, the DONEs are dropped as they
//  come, as act_client_call's. Returns 0 or -1 with err set.
int act_client_plan (act_client_t *self, const char *context, const char *calls,
                     bool wait, json_t **ids, json_t **outcomes, act_err_t *err);

//  APPEND: append message (JSON text). Sets *seq. Returns 0 or -1.
int act_client_append (act_client_t *self, const char *context, const char *message,
                       uint64_t *seq, act_err_t *err);

//  APPEND with an idempotency key (1-128 bytes; NULL: none): a second
//  APPEND with the same key in the same context appends nothing and sets
//  *seq to the first one's. Without a key (act_client_append too), the
//  APPEND gets a random one (a UUID, kept across its resends) when the
//  client knows several brokers, or when a moved reply sends it on to the
//  owner, as a call gets an _id: a retry elsewhere then appends nothing
//  more. With one broker none is added. Returns 0 or -1.
int act_client_append_key (act_client_t *self, const char *context, const char *message,
                           const char *key, uint64_t *seq, act_err_t *err);

//  RESOLVE: the value of expression (in instance, or NULL). Returns a new
//  reference, or NULL with err set (not_found when absent).
json_t *act_client_resolve (act_client_t *self, const char *context,
                            const char *expression, const char *instance,
                            act_err_t *err);

//  VIEW as JSON (a new reference), or NULL with err set.
json_t *act_client_view (act_client_t *self, const char *context, act_err_t *err);

//  VIEW as text (the caller frees), or NULL with err set (bad_frame: a
//  VALUE reply without its frame).
char *act_client_view_text (act_client_t *self, const char *context, act_err_t *err);

//  HISTORY: up to limit messages with _seq >= from. A new array, or NULL.
json_t *act_client_history (act_client_t *self, const char *context, uint64_t from,
                            size_t limit, act_err_t *err);

//  STATUS of a call. A new object, or NULL with err set.
json_t *act_client_status (act_client_t *self, const char *call_id, act_err_t *err);

//  CANCEL a call. Returns 0 or -1 with err set.
int act_client_cancel (act_client_t *self, const char *call_id, act_err_t *err);

//  STATS. A new object, or NULL with err set.
json_t *act_client_stats (act_client_t *self, act_err_t *err);

//  TOOLS (PROTOCOL.md section 2.1): the tools the workers declared,
//  {"<activity>": {"description"?, "params"?, "outputPath"?, "workers"}},
//  for every activity or only activity (when not NULL). A new object, or
//  NULL with err set (unknown_command from a broker without tools).
json_t *act_client_tools (act_client_t *self, const char *activity, act_err_t *err);

//  PING. Returns 0 when PONG came, or -1 with err set.
int act_client_ping (act_client_t *self, act_err_t *err);

//  CONTEXTS: one page of the stored contexts whose id starts with prefix
//  (NULL or "": all), after the context id after (NULL: from the first),
//  at most limit of them (0: the broker's default, 100). A new object
//  {"contexts": [{"context", "messages", "last_seq", "updated", "pending"}],
//  "next"?}: pass next as after for the following page. NULL with err set.
json_t *act_client_contexts (act_client_t *self, const char *prefix, const char *after,
                             size_t limit, act_err_t *err);

//  DELETE a context: its calls not ended are cancelled, then it is removed
//  with its messages and calls. Sets *counts (if not NULL) to a new object
//  {"messages": N, "cancelled": N}. Returns 0, or -1 with err set
//  (not_found when there is no such context).
int act_client_delete (act_client_t *self, const char *context, json_t **counts,
                       act_err_t *err);

//  Wait until call_id has ended, from its DONE or from a watch of its
//  context (never asking STATUS over and over): fire-and-forget calls, and
//  calls submitted without waiting, included. Waits up to the client's
//  timeout. Returns the call's STATUS object once it has ended (a new
//  reference; "outcome" holds what DONE carries), or NULL with err set
//  (timeout, or not_found).
json_t *act_client_wait_call (act_client_t *self, const char *call_id, act_err_t *err);

//  True for a STATUS state in which a call has ended (SEMANTICS.md
//  section 7): any but waiting, queued and running.
bool act_client_state_ended (const char *state);

//  ---------------------------------------------------------------------
//  Watches (PROTOCOL.md section 1.1): a context's messages as they are
//  stored, and with calls its calls' changes of state.

typedef struct _act_watch_t act_watch_t;

//  WATCH context: its messages with _seq >= from_seq, the stored ones
//  first, then each new one; from_seq 0: only those stored from now on
//  (CONTEXTS is asked first for the context's last _seq, waiting up to the
//  client's timeout, so that a watch sent again misses nothing). With
//  calls, each change of state of its calls too. Then returns at once (the
//  broker does not acknowledge a watch; a refusal comes as an error of
//  act_watch_next). The watch belongs to the client: destroy it first (a
//  watch that outlives its client only fails; act_client_destroy has sent
//  its UNWATCH). The WATCH requests a watch sends are the library's own:
//  neither their replies nor an ERROR disconnected for them ever come out
//  of act_client_recv, act_client_poll or act_client_wait.
act_watch_t *act_client_watch (act_client_t *self, const char *context, uint64_t from_seq,
                               bool calls, act_err_t *err);

//  The next event, waiting up to timeout_ms (-1: forever): a new object,
//  {"seq": N, "message": {...}}, {"call": <STATUS object>}, or, the last
//  one, {"deleted": true}. NULL on timeout with err untouched, or NULL
//  with err set when the watch has ended (refused by the broker; after
//  the deleted event: "not_found"; an event that does not read as a JSON
//  object, nested up to ACT_MAX_REPLY_DEPTH: "bad_json", the watch closed
//  rather than sent again). Message events come in _seq order with
//  no duplicate and no gap: after a gap (dropped at the high-water mark),
//  or when the connection drops and comes back (a broker restart), the
//  watch is sent again from the last _seq + 1. With several brokers
//  (sharing a store) it is sent from there to another at once when its
//  broker's connection drops, and when its WATCH waited a third of the
//  client's timeout on a broker not connected (a dead owner a moved reply
//  named, its lease not yet out): the events go on, from that broker,
//  while this one waits in act_watch_next, act_client_recv or
//  act_client_poll. Call events are not numbered: a change of state while
//  no watch was open is missed.
json_t *act_watch_next (act_watch_t *self, int timeout_ms, act_err_t *err);

//  The event act_watch_next returned last, as the broker sent it (JSON
//  text, valid until the next call), or NULL.
const char *act_watch_text (act_watch_t *self);

//  The _seq of the last message event act_watch_next returned (0: none).
uint64_t act_watch_seq (act_watch_t *self);

//  UNWATCH, destroy the watch and null the pointer; safe on NULL.
void act_watch_destroy (act_watch_t **self_p);

#ifdef __cplusplus
}
#endif

#endif
