/*  =========================================================================
    act_flow_int - the call flow's state and the steps its two files share
    (act_submit.c: a call is admitted and accepted; act_flow.c: the rest
    of its path).
    Private to those two files.
    ========================================================================= */

#ifndef ACT_FLOW_INT_H_INCLUDED
#define ACT_FLOW_INT_H_INCLUDED

#include "act_flow.h"
#include "actd/act_scan.h"
#include "actd/act_text.h"
#include "act_live.h"
#include "act_timers.h"
#include "act_watch.h"

typedef struct _act_kept_t act_kept_t;

struct _act_flow_t {
    act_settings_t *settings;   //  Limits and defaults (borrowed)
    act_store_t *store;         //  Durable state (borrowed)
    act_cache_t *cache;         //  Contexts in memory (borrowed)
    act_pool_t *pool;           //  Activities and workers (borrowed)
    act_outbox_t *outbox;       //  Replies and tasks of the pass (borrowed)
    act_watches_t *watches;     //  Who follows which context (borrowed)
    act_tools_t *tools;         //  What each activity takes (PROTOCOL.md 2.1)
    act_timers_t *timers;       //  Deadlines, schedule timeouts, retries
    size_t timers_kept;         //  Timers the last sweep kept: the next waits for twice as many
    act_scan_t *scan;           //  The hot path's JSON scanner, reused
    act_buf_t outcome;          //  An ending call's outcome text, its room
                                //  reused from one call to the next
    zhashx_t *calls;            //  Call id -> act_live_t, calls not ended
    zhashx_t *keys;             //  context<US>_id -> act_live_t
    uint64_t *todo;             //  Calls to evaluate again (numbers)
    size_t ntodo;               //  Entries in todo
    size_t todo_size;           //  Slots allocated
    size_t counts [ACT_LIVE_STATES];   //  Live calls per state (waiting, ...)
    bool stopping;              //  No new calls, no dispatch
    bool reset;                 //  A failed commit reset the flow: a call
                                //  stored running was running in this run
    act_kept_t *kept;           //  Answers kept until their effects are
                                //  durable (act_flow_kept.c), in the order taken
    size_t nkept;               //  Entries in kept
    size_t kept_room;           //  Slots allocated
    size_t untaken;             //  Of those, the ones not taken again since
                                //  a failed commit (act_flow_kept_retake)
    uint64_t commits;           //  Commits that succeeded (act_flow_kept_committed)
    bool keep_always;           //  The store's commits can fail: every
                                //  answer is kept until its batch commits
    bool keeping;               //  Commits fail, or recovery runs: keep them
    bool failing;               //  Commits fail: attempts do not time out
    bool recovering;            //  Recovery runs: keep those of calls not live
    bool replaying;             //  A kept answer is being taken again
    uint64_t batch;             //  The batch answers' effects go into now
    uint64_t sealed;            //  The last batch handed to a commit
    zhashx_t *began;            //  Task id -> when its attempt began (us), of
                                //  the calls running when a failed commit
                                //  reset the flow, or NULL
};


//  The live call numbered number, or NULL.
act_live_t *act_flow_lookup (act_flow_t *self, uint64_t number);

//  A new error object {code, message}.
json_t *act_flow_error_json (const char *code, const char *message);

//  End the call with status (for ok: the worker's text of its result,
//  result_size bytes, valid JSON, not NUL-terminated): write its output,
//  store the outcome, send DONE, wake the calls that waited for it, and
//  forget it. Takes ownership of error.
void act_flow_finish (act_flow_t *self, act_live_t *call, const char *status, json_t *error,
                      const char *result_text, size_t result_size, long long branch);

//  One attempt failed: retry when the policy allows (after the backoff
//  delay when delay is set), else end the call. Takes ownership of error.
void act_flow_failed (act_flow_t *self, act_live_t *call, json_t *error, bool retryable,
                      bool delay);

//  Drop a call that was never accepted: release its reservation, free it.
void act_flow_drop (act_flow_t *self, act_live_t **call_p);

//  Register the call under its _id in its context (add), or forget it.
void act_flow_key (act_flow_t *self, act_live_t *call, bool add);

//  Move call to state, and tell the watches of its context that follow
//  calls (states of a live call; an ended call is told by its finish).
void act_flow_enter (act_flow_t *self, act_live_t *call, act_live_state_t state);

//  Queue the call after its retry delay (ms): it goes to the front of
//  its activity's queue when the delay ends.
void act_flow_backoff (act_flow_t *self, act_live_t *call, long long delay);

//  Dispatch the queue of call's activity (call queued, not in its retry
//  delay) as far as call, as workers are free; the calls behind it stay
//  queued. call may have ended when it returns (its params refused).
void act_flow_dispatch (act_flow_t *self, act_live_t *call);

//  A recovered call stored running: when a worker still holds its
//  attempt's task (a commit failed while it ran, and state was taken
//  again from the store), it is running there again, its deadline its
//  attempt's (act_flow_reset noted when it began), and true; else false,
//  and nothing changed.
bool act_flow_attach (act_flow_t *self, act_live_t *call);

//  Keep a worker's answer to task (its body, or NULL: an empty one; the
//  branch frame or NULL; fail: a FAIL) until its effects are durable
//  (act_flow_kept.c); taken: its call is live and the answer is taken
//  now, else it waits for its call to be recovered (act_flow_kept_retake).
//  Returns true when kept.
bool act_flow_kept_add (act_flow_t *self, act_worker_t *worker, const char *task,
                        zmq_msg_t *body, zmq_msg_t *branch, bool fail, bool taken);

//  Free the kept answers (the flow is destroyed).
void act_flow_kept_destroy (act_flow_t *self);

//  Queue call number for the next evaluation round (a worklist); a call
//  queued but not dispatched yet is dispatched then.
void act_flow_todo (act_flow_t *self, uint64_t number);

//  Put call in its activity's queue (at the front when front is set) in
//  state queued, with its schedule timeout; nothing is dispatched.
void act_flow_enqueue (act_flow_t *self, act_live_t *call, bool front);

//  End call with status (error, skipped, ...), code and message (as any
//  ended call: its output written, its outcome stored and sent).
void act_flow_end (act_flow_t *self, act_live_t *call, const char *status, const char *code,
                   const char *message);

//  What a timer of a call means (act_timers' type)
typedef enum { T_DEADLINE, T_SCHEDULE, T_RETRY } act_flow_timer_type_t;

//  call's attempt failed with code and message: retried after its delay
//  when its _retry allows, else it ends (act_flow_timers.c: a deadline).
void act_flow_attempt_failed (act_flow_t *self, act_live_t *call, const char *code,
                              const char *message);

//  call's retry delay is over: to the front of its queue, and stored.
void act_flow_retry_now (act_flow_t *self, act_live_t *call);

//  The cache's loaded hook (act_recover.c): recover context's calls that
//  had not ended, oldest first (an older call may produce for a newer one).
void act_flow_recover (void *arg, act_context_t *context);

#endif
