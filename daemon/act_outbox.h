/*  =========================================================================
    act_outbox - what one pass of the broker sends, held until its commit.

    Replies and tasks are built here as libzmq messages during a pass and
    leave only after the store has committed what they report (group
    commit): no reply ever promises more than the store holds. If the
    commit fails, act_outbox_refuse turns every promise into a refusal
    before anything leaves. A message to a worker marked early
    (act_out_early: a TASK that promises nothing stored) may leave before
    its commit, but never ahead of a held message to the same worker.

    The outbox does not own sockets: act_outbox_flush hands each message
    to a send function, which is the broker's sockets in actd and an
    observer in the fuzzers and tests.
    ========================================================================= */

#ifndef ACT_OUTBOX_H_INCLUDED
#define ACT_OUTBOX_H_INCLUDED

#include <czmq.h>
#include "actd/act_err.h"
#include "act_held.h"

typedef struct _act_outbox_t act_outbox_t;
typedef struct _act_out_t act_out_t;

//  Sends one message whose frames are parts [0..nparts) (routing id
//  first) to the client socket or the worker socket. Returns true when it
//  went. It may move the parts' content (zmq_msg_send does); the outbox
//  closes them after.
typedef bool (act_outbox_send_fn) (void *arg, bool to_worker, zmq_msg_t *parts,
                                   size_t nparts);

//  True when a message owed to the client that authenticated with CURVE
//  key owner (Z85) may go to routing id (size bytes) now, and (context
//  not NULL) owner's grant still reaches context (act_out_owner).
typedef bool (act_outbox_guard_fn) (void *arg, const void *id, size_t size,
                                    const char *owner, const char *context);

//  Bytes of a CURVE key in Z85 and its NUL
#define ACT_OWNER_SIZE 41

//  An empty outbox; NULL when out of memory.
act_outbox_t *act_outbox_new (void);

//  Bound the bytes libzmq may hold for one client (replies not yet
//  written to its connection) to bytes (0: no bound). A client that a
//  reply would take past it does not read: the reply and all later ones
//  are dropped, it is logged once and listed for act_outbox_next_cut,
//  until libzmq holds nothing for it (then it starts clean). One reply
//  always goes when nothing is held.
void act_outbox_set_max_client_bytes (act_outbox_t *self, size_t bytes);

//  True when client (its routing id) went past max_client_bytes and
//  libzmq still holds replies for it: its next replies would be dropped.
bool act_outbox_client_over (act_outbox_t *self, zframe_t *client);

//  The routing id of the next client that went past max_client_bytes
//  since the last call, whose connection is to be cut (the caller
//  destroys it), or NULL.
zframe_t *act_outbox_next_cut (act_outbox_t *self);

//  Clients that went past max_client_bytes since the outbox was made.
uint64_t act_outbox_cuts (act_outbox_t *self);

//  Bytes libzmq holds for all clients now (tracked frames).
size_t act_outbox_client_bytes (act_outbox_t *self);

//  Forget the accounts of clients libzmq holds nothing for; call it now
//  and then.
void act_outbox_sweep (act_outbox_t *self);

//  Destroy the outbox and what it holds, and null the pointer; safe on NULL.
void act_outbox_destroy (act_outbox_t **self_p);

//  A new message at the end of the outbox, to a worker or a client;
//  durable when it promises stored state (ACCEPTED, OK of APPEND, DONE).
//  The caller adds its frames at once: the next act_outbox_add may move
//  it. NULL-safe adders below make "no such message" cheap to express.
act_out_t *act_outbox_add (act_outbox_t *self, bool to_worker, bool durable);

//  A reply to a client, [client][ACTC01][verb][request], at the end of
//  the outbox; the caller adds its body frames. verb is a string literal
//  (act_out_literal: it is not copied).
act_out_t *act_outbox_reply (act_outbox_t *self, zframe_t *client, zframe_t *request,
                             const char *verb, bool durable);

//  act_outbox_reply to a client and request given as bytes.
act_out_t *act_outbox_reply_to (act_outbox_t *self, const void *client, size_t client_size,
                                const void *request, size_t request_size,
                                const char *verb, bool durable);

//  While a request from a REQ socket is served (PROTOCOL.md section 1: it
//  starts with an empty frame), every reply to client starts with an
//  empty frame after the routing id; NULL ends that. DONE is not sent to
//  such a client: a REQ socket takes one reply per request.
void act_outbox_envelope (act_outbox_t *self, zframe_t *client);

//  While a request of client (its routing id) is served: the CURVE key
//  (Z85) it authenticated with, or NULL (none: CURVE is off, or no
//  request served). Every reply to that routing id built meanwhile is
//  owed to that key (act_out_owner, with no context): it goes only to a
//  connection of that key, not to one that took the routing id after
//  the client left while the reply waited for its commit (or its HISTORY
//  page was built). What is owed later (DONE, EVENT) is tied the same
//  way by its builder. Both are borrowed until the next call.
void act_outbox_serving (act_outbox_t *self, zframe_t *client, const char *owner);

//  The key act_outbox_serving set, or NULL.
const char *act_outbox_serving_owner (act_outbox_t *self);

//  True when replies to client get an envelope now (act_outbox_envelope).
bool act_outbox_enveloped (act_outbox_t *self, zframe_t *client);

//  ERROR with err's code and message to a client's request (command
//  names the request in the log line: a refusal is logged at info, per
//  client and code). limit: the setting whose bound refused it busy
//  (static, such as "max_queue"), or NULL; such a refusal is logged at
//  notice, naming the client (routing id and key) and the limit, per
//  client and limit.
void act_outbox_error (act_outbox_t *self, zframe_t *client, zframe_t *request,
                       const char *command, const act_err_t *err, const char *limit);

//  out, a message to a worker, promises nothing the store holds: it may
//  leave before the commit of its pass (act_outbox_flush_early). Nothing
//  for a reply to a client or NULL.
void act_out_early (act_out_t *out);

//  Nobody waits for out: a reply whose client waits for a later one
//  anyway (the ACCEPTED of calls that all have an output path: DONE
//  follows), or a HEARTBEAT. It may wait a little longer for its commit
//  (act_outbox_awaits_early). Nothing for NULL.
void act_out_patient (act_out_t *out);

//  out is owed to the client that authenticated with CURVE key owner
//  (Z85; NULL or "": to whoever holds its routing id), about context (or
//  NULL: a reply to a request, judged when it was served). It is sent
//  only if the outbox's guard says the connection behind its routing id
//  is that client's and (context given) that client's grant still reaches
//  context (a reload may have moved its key); else it is dropped
//  (act_outbox_unowned).
void act_out_owner (act_out_t *out, const char *owner, const char *context);

//  Judge messages with an owner by guard (NULL: send them all).
void act_outbox_set_guard (act_outbox_t *self, act_outbox_guard_fn *guard, void *arg);

//  Messages dropped so far because their owner's connection was not the
//  one behind their routing id.
uint64_t act_outbox_unowned (act_outbox_t *self);

//  Add a frame of size bytes (a string, a CZMQ frame) to out; nothing
//  when out is NULL.
void act_out_add (act_out_t *out, const void *data, size_t size);

//  Charge the large frames added to out from now on to held (NULL: none),
//  a worker's account (act_held.h): frames of 512 bytes or more count in
//  it from when they are added until libzmq has written them to its
//  connection or dropped them.
void act_out_charge (act_out_t *out, act_held_t *held);
void act_out_addstr (act_out_t *out, const char *string);
void act_out_frame (act_out_t *out, zframe_t *frame);

//  Add shared (act_held.h: bytes built once for many messages, such as
//  an EVENT's body to every watcher of a context) as a frame of out: one
//  of 512 bytes or more is handed to libzmq as the same bytes in every
//  message it is added to, not copied; a smaller one is copied. It counts
//  in full in the account of each client it goes to, as a frame of its
//  own would. Nothing when out or shared is NULL.
void act_out_shared (act_out_t *out, act_shared_t *shared);

//  Add a frame of literal, a string that lives as long as the program (a
//  string literal, a protocol header): handed to libzmq as it is, not
//  copied. Nothing when out is NULL.
void act_out_literal (act_out_t *out, const char *literal);

//  Messages waiting.
size_t act_outbox_size (act_outbox_t *self);

//  Bytes of the messages waiting (their frames).
size_t act_outbox_bytes (act_outbox_t *self);

//  True when a message to the client with this routing id is waiting.
bool act_outbox_holds (act_outbox_t *self, const void *client, size_t size);

//  Told of an EVENT that a failed commit dropped: the routing id of its
//  client, the request id of its WATCH and its body (act_outbox_refuse)
typedef void (act_outbox_lost_fn) (void *arg, zmq_msg_t *client, zmq_msg_t *request,
                                   zmq_msg_t *body);

//  The commit of the pass failed: nothing durable may be promised. Replies
//  that promised stored state become ERROR internal to the same request
//  ("the store could not commit (cause); nothing was kept", cause a few
//  words on why, as act_store_cause gives them, or left out when NULL),
//  DONE is dropped (the call runs again after recovery), so is EVENT
//  (what it reported was not kept, or not sent yet: lost, when not NULL,
//  hears of each, for its watch to send it again), and messages to
//  workers are dropped (their tasks were never stored as running).
//  Returns how many messages were refused or dropped.
size_t act_outbox_refuse (act_outbox_t *self, const char *cause, act_outbox_lost_fn *lost,
                          void *arg);

//  Told of a message to a worker that act_outbox_refuse dropped unsent:
//  its frames, routing id first
typedef void (act_outbox_unsent_fn) (void *arg, zmq_msg_t *parts, size_t nparts);

//  Tell unsent (with arg) of each message to a worker that a failed
//  commit drops before it left (act_outbox_refuse).
void act_outbox_on_unsent (act_outbox_t *self, act_outbox_unsent_fn *unsent, void *arg);

//  Send every message in order through send and empty the outbox.
//  Returns how many went.
size_t act_outbox_flush (act_outbox_t *self, act_outbox_send_fn *send, void *arg);

//  The messages held now wait for the commit being started; those added
//  from now on wait for a later one.
void act_outbox_seal (act_outbox_t *self);

//  That commit has ended: send the sealed messages in order, as
//  act_outbox_flush does, and keep the later ones. Returns how many went.
size_t act_outbox_flush_sealed (act_outbox_t *self, act_outbox_send_fn *send, void *arg);

//  True when the messages not sealed include an early one (left, or to
//  leave at the next act_outbox_flush_early) and all the others are
//  patient (act_out_patient): a commit of the batch now would only hurry
//  messages nobody waits for, while a worker runs a task whose result
//  could share that commit.
bool act_outbox_awaits_early (act_outbox_t *self);

//  Send now the messages marked early (act_out_early), in order, whether
//  sealed or not, but none after a message held for its commit to the
//  same worker (a CANCEL never overtakes its TASK, nor a TASK a
//  DISCONNECT); the others keep their order and their commits. Returns
//  how many went.
size_t act_outbox_flush_early (act_outbox_t *self, act_outbox_send_fn *send, void *arg);

#endif
