/*  =========================================================================
    act_wproto - the worker socket's protocols: ACT/1 (PROTOCOL.md
    section 2) and Majordomo 7/MDP and 18/MDP workers. Each message is
    decoded, checked and handed to the pool (READY) or the call flow
    (RESULT, FAIL, PROGRESS, a lost worker); a peer that breaks the
    protocol is answered DISCONNECT in its own protocol.
    ========================================================================= */

#ifndef ACT_WPROTO_H_INCLUDED
#define ACT_WPROTO_H_INCLUDED

#include "act_flow.h"
#include "act_security.h"
#include "act_inbox.h"

typedef struct _act_wproto_t act_wproto_t;

//  The worker side of a broker's parts (borrowed).
act_wproto_t *act_wproto_new (act_settings_t *settings, act_pool_t *pool, act_flow_t *flow,
                              act_outbox_t *outbox);

//  Destroy it and null the pointer; safe on NULL.
void act_wproto_destroy (act_wproto_t **self_p);

//  Check READYs against what each worker key may serve (security,
//  borrowed; NULL: anything).
void act_wproto_set_security (act_wproto_t *self, act_security_t *security);

//  Handle one message from the worker socket, [routing id][frames...]
//  (the caller's: it closes it).
void act_wproto_message (act_wproto_t *self, act_msg_t *msg);

//  Heartbeats (every heartbeat_ms a message to each worker that heard
//  nothing else) and, when judge is set, liveness (a worker silent for
//  liveness intervals is lost), at now; a worker that stopped reading its
//  tasks (server/max_worker_bytes) and has read them since is given more.
//  The caller judges only when it has read what workers sent.
void act_wproto_heartbeat (act_wproto_t *self, long long now, bool judge);

//  A message to the worker with routing id (size bytes) could not be
//  sent: the socket has no route to it (its connection is gone). That
//  worker, if registered, is lost: what it was sent may never have come,
//  so its tasks go back (PROTOCOL.md 2, at least once).
void act_wproto_unreachable (act_wproto_t *self, const void *id, size_t size);

//  actd itself was paused (stopped, swapped out, a pass that ran long) for
//  paused ms: no worker could be heard meanwhile, so each gets a fresh
//  liveness window from now instead of all being judged lost.
void act_wproto_resume (act_wproto_t *self, long long now, long long paused);

//  After a reload of the keys: disconnect every worker whose key may no
//  longer serve one of its activities (its tasks go to other workers).
void act_wproto_revoke (act_wproto_t *self);

#endif
