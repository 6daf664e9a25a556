/*  =========================================================================
    act_flow - a call's path through the broker, top to bottom: submit,
    validate, store, wait for dependencies, queue, dispatch, result / fail
    / timeout / worker lost, write the output, finish (DONE, wake the calls
    that waited), and the recovery of a loaded context's calls.

    Every change of a call's state goes through one function, which keeps
    the counters (per activity and in all) and voids the call's timers.
    Replies and tasks go to the outbox; the broker sends them after the
    pass's commit. Calls whose producers ended are evaluated again by
    act_flow_settle, which the broker runs after each message and timer.
    ========================================================================= */

#ifndef ACT_FLOW_H_INCLUDED
#define ACT_FLOW_H_INCLUDED

#include "act_settings.h"
#include "act_cache.h"
#include "act_pool.h"
#include "act_outbox.h"
#include "act_live.h"
#include "act_watch.h"
#include "act_tools.h"
#include "act_security.h"

typedef struct _act_flow_t act_flow_t;

//  A flow over the broker's parts (all borrowed). It registers itself as
//  the cache's loaded hook, to recover the calls of each loaded context.
act_flow_t *act_flow_new (act_settings_t *settings, act_store_t *store, act_cache_t *cache,
                          act_pool_t *pool, act_outbox_t *outbox, act_watches_t *watches);

//  Destroy the flow and its live calls; null the pointer; safe on NULL.
void act_flow_destroy (act_flow_t **self_p);

//  CALL (entries NULL: the call is the call_size bytes of JSON at
//  call_text, as sent, checked here) and PLAN (entries, all or none):
//  validate, store, start; ACCEPTED or ERROR to the client.
void act_flow_submit (act_flow_t *self, zframe_t *client, zframe_t *request,
                      const char *command, const char *context_id, json_t *entries,
                      const char *call_text, size_t call_size);

//  The registry of tools the workers declared (the flow's).
act_tools_t *act_flow_tools (act_flow_t *self);

//  The live call numbered number, or NULL (not live here: ended, not
//  recovered yet, never).
act_live_t *act_flow_call (act_flow_t *self, uint64_t number);

//  STATUS of the call named id (a decimal call id), live or ended, as
//  PROTOCOL.md gives it; NULL with err: not_found when there is no such
//  call or grant does not reach its context (call ids are sequential:
//  guessing them reveals nothing of other tenants' calls); moved or
//  internal when its context cannot be loaded here
json_t *act_flow_status (act_flow_t *self, const act_grant_t *grant, const char *id,
                         act_err_t *err);

//  CANCEL the call named id: 1 when a live call was cancelled, 0 when it
//  had ended (nothing changes), -1 with err as act_flow_status
int act_flow_cancel_id (act_flow_t *self, const act_grant_t *grant, const char *id,
                        act_err_t *err);

//  The live calls of context as STATUS objects (a new array; empty when
//  none), for a watch that starts following its calls.
json_t *act_flow_statuses (act_flow_t *self, act_context_t *context);

//  Cancel a live call (CANCEL): it ends cancelled, with its DONE; a
//  running task gets CANCEL at its worker.
void act_flow_cancel (act_flow_t *self, act_live_t *call);

//  A worker joined or has room: give it calls, its activities in turn.
void act_flow_worker_ready (act_flow_t *self, act_worker_t *worker);

//  Activities act_flow_worker_ready looked at in this process so far.
//  Tests bound what a worker's turn costs with it.
size_t act_flow_ready_steps (void);

//  A worker's RESULT for task (body: the result; branch: its frame or
//  NULL), FAIL (body: the error object) or PROGRESS (body: details). The
//  task is one the worker holds; its slot is freed by RESULT and FAIL.
void act_flow_result (act_flow_t *self, act_worker_t *worker, const char *task,
                      zmq_msg_t *body, zmq_msg_t *branch);
void act_flow_fail (act_flow_t *self, act_worker_t *worker, const char *task,
                    zmq_msg_t *body);
void act_flow_progress (act_flow_t *self, act_worker_t *worker, const char *task,
                        zmq_msg_t *body);

//  True when worker holds a task whose attempt is still running (not
//  timed out, cancelled or dispatched again since).
bool act_flow_busy (act_flow_t *self, act_worker_t *worker);

//  Keep workers' answers (act_flow_kept.c) until their batch commits,
//  always on a store whose commits can fail, else while commits fail
//  (failing) or recovery runs; those of calls not live yet while
//  recovering. While failing, running attempts do not time out
//  (act_flow_timers).
void act_flow_kept_on (act_flow_t *self, bool failing, bool recovering);

//  The open batch is handed to a commit: answers taken from now on go
//  into the next one.
void act_flow_kept_sealed (act_flow_t *self);

//  The batch last handed to a commit is durable: its answers are dropped.
void act_flow_kept_committed (act_flow_t *self);

//  A commit failed: every kept answer goes back to its worker's table, to
//  be taken again once its call is recovered (act_flow_attach). Before
//  act_flow_reset.
void act_flow_kept_reset (act_flow_t *self);

//  Take again the kept answers whose calls are attached and that may be
//  taken now (one whose effects failed a commit waits for a commit to
//  succeed). Cheap when there are none.
void act_flow_kept_retake (act_flow_t *self);

//  While commits fail: write again the record of a call attached to a
//  kept answer waiting for a commit to succeed, so that a commit tells
//  whether the store can commit again when nothing else is to be
//  written. Returns true when it wrote one.
bool act_flow_kept_probe (act_flow_t *self);

//  Recovery is done: the kept answers no call took are dropped and their
//  slots freed. Returns how many.
size_t act_flow_kept_drop (act_flow_t *self);

//  After state was taken again from the store (a failed commit): put in
//  outbox CANCEL of each task a worker holds that no call took back (its
//  call was not kept, or runs as another attempt), once; its slot stays
//  taken until the worker answers. Returns how many were cancelled.
size_t act_flow_cancel_orphans (act_flow_t *self, act_outbox_t *outbox);

//  The worker is gone (silent, disconnected, misbehaving): its tasks go
//  back to the front of their queues as new attempts, or end
//  worker_lost; the worker is forgotten.
void act_flow_worker_lost (act_flow_t *self, act_worker_t *worker, const char *why);

//  Run the timers due at now (deadlines, schedule timeouts, retries).
void act_flow_timers (act_flow_t *self, long long now);

//  When the next timer fires, or -1 when none is set.
long long act_flow_next_timer (act_flow_t *self);

//  Evaluate again the calls whose producers have all ended, and dispatch
//  the calls recovered queued since the last time.
void act_flow_settle (act_flow_t *self);

//  DELETE context_id (or retention): cancel its calls that have not
//  ended (each ends cancelled, with its DONE), remove it, its messages
//  and its calls from the store and from memory, and end its watches.
//  Returns a new {"messages": N, "cancelled": N}, or NULL with err
//  (not_found, moved, internal).
json_t *act_flow_delete (act_flow_t *self, const char *context_id, act_err_t *err);

//  Stop taking calls and dispatching (a shutdown). Queued calls stay
//  stored and run at the next start.
void act_flow_stop (act_flow_t *self);

//  True once act_flow_stop was called.
bool act_flow_stopping (act_flow_t *self);

//  Forget every live call without ending it (the store still has them):
//  after the store was lost, or before reloading state.
void act_flow_forget (act_flow_t *self);

//  As act_flow_forget, after a commit failed: from now on, recovery takes
//  a call stored running for one whose attempt was lost with a commit of
//  this run, not with a crash of actd, and runs it again whatever
//  attempts it has used (act_recover.c).
void act_flow_reset (act_flow_t *self);

//  At a clean stop, once no task will be dispatched or answered: store
//  each call still running as queued, its attempts as they are, so that
//  the next start runs it again as its next attempt instead of taking the
//  interrupted one for a crash (act_recover.c).
void act_flow_park (act_flow_t *self);

//  Live calls in each state, and in all.
size_t act_flow_waiting (act_flow_t *self);
size_t act_flow_queued (act_flow_t *self);
size_t act_flow_running (act_flow_t *self);
size_t act_flow_live (act_flow_t *self);

#endif
