/*  =========================================================================
    act_watch - the open watches (PROTOCOL.md section 1.1, WATCH): which
    client request follows which context, from which _seq, and whether it
    wants its calls' changes of state too.

    A watch sends the stored messages of its context in _seq order: first
    those already stored (its backlog, read from the store a page at a
    time by act_watches_pump, so a long history never stalls the loop),
    then each new one as it is appended. Every event goes through the
    outbox, so it leaves only after the commit that made it durable; a
    failed commit drops it (act_outbox_refuse), as it drops DONE, and the
    watch goes back to the first message it was not sent (act_watches_lost,
    act_watches_rewind): the store gives a lost message's _seq again, and
    the watch sends what is stored under it once it is.
    ========================================================================= */

#ifndef ACT_WATCH_H_INCLUDED
#define ACT_WATCH_H_INCLUDED

#include "act_outbox.h"
#include "act_store.h"

typedef struct _act_watches_t act_watches_t;

//  No watches yet, at most max of them; events read from store and sent
//  through outbox (both borrowed).
act_watches_t *act_watches_new (act_store_t *store, act_outbox_t *outbox, size_t max);

//  Destroy them (no last event) and null the pointer; safe on NULL.
void act_watches_destroy (act_watches_t **self_p);

//  Open a watch of context for client's request: messages from _seq next
//  on (backlog says whether stored ones may precede the live ones), and
//  with calls its calls' changes of state. Returns 0, or -1 with err busy
//  when max watches are open.
int act_watches_open (act_watches_t *self, zframe_t *client, zframe_t *request,
                      const char *context, uint64_t next, bool backlog, bool calls,
                      act_err_t *err);

//  UNWATCH: close client's watch opened by request, if there is one.
void act_watches_close (act_watches_t *self, zframe_t *client, zframe_t *request);

//  A message of context was stored (text, its stored JSON, with _seq seq):
//  send it to the watches that have their backlog behind them. The event
//  is built once: its body's bytes are shared by every watcher's EVENT
//  (so is a call's change of state, act_watches_call).
void act_watches_message (act_watches_t *self, const char *context, uint64_t seq,
                          const char *text);

//  To the watch opened by request of client alone: an EVENT for a call
//  (status is its STATUS object's text), as act_watches_call sends.
void act_watches_tell (act_watches_t *self, zframe_t *client, zframe_t *request,
                       const char *status);

//  True when a watch of context wants its calls' changes of state.
bool act_watches_calls (act_watches_t *self, const char *context);

//  A call of context changed state: status is its STATUS object's text.
void act_watches_call (act_watches_t *self, const char *context, const char *status);

//  Context was deleted: each watch of it gets {"deleted": true} and ends.
void act_watches_deleted (act_watches_t *self, const char *context);

//  The client with routing id (size bytes) cannot be reached any more:
//  its watches end.
void act_watches_drop_client (act_watches_t *self, const void *id, size_t size);

//  Send backlogs: at most budget stored messages read, over the watches
//  that are behind. Returns how many were sent.
size_t act_watches_pump (act_watches_t *self, size_t budget);

//  Watches with a backlog left to send (the loop does not sleep while
//  there are).
size_t act_watches_behind (act_watches_t *self);

//  Watches open.
size_t act_watches_size (act_watches_t *self);

//  act_outbox_refuse's lost function (arg: the watches): a failed commit
//  dropped the EVENT body to the watch that client's request opened. Noted
//  for act_watches_rewind.
void act_watches_lost (void *arg, zmq_msg_t *client, zmq_msg_t *request, zmq_msg_t *body);

//  After a failed commit's refusals (act_watches_lost told of each EVENT
//  dropped): a watch whose message events were dropped goes back to the
//  first of them, and sends from there what the store holds, then what is
//  appended (a lost message's _seq is given again to the next one kept);
//  a watch that a DELETE ended, whose commit failed, is open again.
void act_watches_rewind (act_watches_t *self);

#endif
