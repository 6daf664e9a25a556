/*  =========================================================================
    act_live - one live call: a call the broker accepted and that has not
    ended, with its state, attempts, retry policy, the calls waiting for
    it and the clients its DONE goes to.

    Its state changes only through act_live_enter, which keeps every
    counter (the activity's backlog, queued and running, and the flow's
    per-state totals) and voids the call's pending timers. A live call
    also knows how to evaluate its dependencies against its context.
    ========================================================================= */

#ifndef ACT_LIVE_H_INCLUDED
#define ACT_LIVE_H_INCLUDED

#include "act_cache.h"
#include "act_pool.h"
#include "act_outbox.h"

//  A live call's state. NONE: made, nothing counted; NEW: prepared, its
//  place in its activity's backlog reserved until it is accepted or not
typedef enum {
    ACT_LIVE_NONE, ACT_LIVE_NEW, ACT_LIVE_WAITING, ACT_LIVE_QUEUED, ACT_LIVE_RUNNING,
    ACT_LIVE_ENDED, ACT_LIVE_STATES
} act_live_state_t;

//  What an evaluation of a call's references says
typedef enum {
    ACT_LIVE_READY,             //  Every reference present: it may run
    ACT_LIVE_WAIT,              //  Some wait for earlier live calls
    ACT_LIVE_UNRESOLVED         //  One is absent and nothing can write it
} act_live_eval_t;

//  Where a DONE goes
typedef struct _act_live_recipient_t {
    byte *client;               //  Routing id of the client socket, then
                                //  the request id (one allocation, or the
                                //  call's first_bytes)
    size_t client_size;         //  Bytes of the routing id
    byte *request;              //  Request id to echo (after the client's)
    size_t request_size;        //  Bytes of the request id
    char owner [ACT_OWNER_SIZE];    //  CURVE key the client authenticated
                                //  with; its DONE goes only to a
                                //  connection of that key ("": no CURVE)
} act_live_recipient_t;

//  Bytes of a first recipient's ids kept in the call itself
#define ACT_LIVE_MAX_RECIPIENTS 1024  //  Requests a call's DONE goes to, at
                                //  most (a CALL repeating its _id waits too)
#define ACT_LIVE_FIRST_BYTES 32

typedef struct {
    uint64_t number;            //  Call id as a number; also its order
    char id [24];               //  Call id as text
    act_context_t *context;     //  Context it belongs to
    act_call_t *call;           //  The parsed call, holding its text
    const char *text;           //  The call as submitted (JSON text), the
                                //  call's own
    act_activity_t *activity;   //  Activity (its _tool)
    act_live_state_t state;     //  Where it is in its life
    bool backoff;               //  Queued, but waiting its retry delay
    bool repeated;              //  Its recipients include requests that
                                //  repeated its _id (kept in its resume
                                //  state, as the store's row has the
                                //  first submitter only)
    long long retry_until;      //  With backoff: when the delay ends
                                //  (wall-clock ms, to outlive a restart)
    long long retry_delay;      //  With backoff: the delay's length (ms)
    bool recovered;             //  Loaded from the store (a restart, a
                                //  failed commit), not accepted in this run
    long long attempts;         //  Dispatches to a worker so far
    act_retry_t retry;          //  Retry policy, every field set
    long long timeout_ms;       //  Start-to-close limit of one attempt
    act_worker_t *worker;       //  Worker running the current attempt
    char task [ACT_TASK_ID_SIZE];   //  Current task id: "<call>.<attempt>"
    void *queue_handle;         //  Handle in activity->queue when queued
    uint32_t timer;             //  Generation: timers of older ones are void
    uint32_t round;             //  Evaluation round (dependencies)
    size_t waiting_on;          //  Producers not ended in this round
    const act_ref_t **awaited;  //  While it waits: the references it
                                //  waits for the writers of (absent at
                                //  its last resolution), NULL if none
    size_t nawaited;            //  Entries in awaited
    zlistx_t *waiters;          //  act_live_waiter_t * waiting for it, or NULL
    act_producer_t *producer;   //  Its targets in the dependency index
    struct _act_live_recipient_t *recipients;  //  Where its DONE goes (an
                                //  array, most calls have one: then it is
                                //  first), or NULL
    size_t nrecipients;         //  Entries in recipients
    act_live_recipient_t first; //  The first recipient, while it is the
                                //  only one (no allocation then)
    byte first_bytes [ACT_LIVE_FIRST_BYTES];   //  Its ids, when they fit
    json_t *progress;           //  Latest PROGRESS details, or NULL
    long long accepted_at;      //  When it was accepted (or recovered)
    long long queued_at;        //  When it last entered the queue
    long long started_at;       //  When its current attempt was dispatched
                                //  (us, act_hist_clock_us)
    uint64_t tool_checked;      //  Version of its tool its params passed at
                                //  submit (act_tools_admit), 0: none
} act_live_t;

//  A later call waiting for this one, in one evaluation round
typedef struct {
    uint64_t number;            //  The waiting call
    uint32_t round;             //  Its round when it started waiting
} act_live_waiter_t;

//  A live call of context made of call (which it takes), its activity
//  from pool, in state NONE.
act_live_t *act_live_new (act_pool_t *pool, act_context_t *context, act_call_t *call);

//  Free the call and null the pointer; safe on NULL. Its counters must
//  be settled (state NONE or ENDED).
void act_live_destroy (act_live_t **self_p);

//  Give the call its number (and id text).
void act_live_number (act_live_t *self, uint64_t number);

//  Set the call's task id to its current attempt's, "<call>.<attempt>".
void act_live_task_id (act_live_t *self);

//  Move the call to state: undo what the old state counted and held, then
//  count the new one in its activity and in counts (ACT_LIVE_STATES
//  entries). Voids the call's pending timer.
void act_live_enter (act_live_t *self, act_live_state_t state, size_t *counts);

//  The state's name as STATUS shows it.
const char *act_live_state_name (act_live_state_t state);

//  Its DONE goes (also) to this client's request; once per request.
//  owner is the CURVE key the client authenticated with, or NULL. With
//  hex, client and request are hex texts (a stored record's; client may
//  be followed by a space and the owner's key).
void act_live_recipient_add (act_live_t *self, zframe_t *client, zframe_t *request,
                             const char *owner);
void act_live_recipient_hex (act_live_t *self, const char *client, const char *request);

//  The call's record for the store, in state (texts borrowed; *progress
//  is the caller's to free).
act_call_record_t act_live_record (act_live_t *self, const char *state, const char *outcome,
                                   char **progress);

//  Store the call's current state (in the store's batch).
void act_live_save (act_live_t *self, act_store_t *store);

//  Store a call just accepted, in state ("waiting" or "queued"), with the
//  client to answer (its routing id in hex, then the owner's key when
//  owner is set) and its request id; client may be NULL (no DONE).
void act_live_put (act_live_t *self, act_store_t *store, const char *state, zframe_t *client,
                   zframe_t *request, const char *owner);

//  The call waits delay ms for its next attempt from now: retry_until
//  and retry_delay are set (a delay past the clock's range is the end of
//  time, not an overflow: _retry's delays are any positive integers).
void act_live_retry_wait (act_live_t *self, long long delay);

//  Store what the call needs to go on after a restart beyond its record
//  (act_store_put_resume): its recipients when some repeated its _id,
//  and, in its retry delay, when the delay ends. Only such calls call
//  it: a plain call never writes one.
void act_live_put_resume (act_live_t *self, act_store_t *store);

//  Take back a recovered call's stored resume state (NULL: none), as of
//  now_ms (wall clock): its recipients are added, and the wait left of its
//  retry delay is returned (0: none) when the record is still in that
//  delay (queued, with the attempts the delay followed). What is left is
//  never more than the delay itself: a wall clock set back meanwhile does
//  not make the call wait longer than its _retry says.
long long act_live_resume (act_live_t *self, const json_t *resume, const char *state,
                           long long now_ms);

//  Evaluate the call's references in a new round, against its context
//  and the live calls that could still write them. On WAIT it is
//  registered as a waiter of the newest and the oldest producer it needs
//  (waiting_on 2, or 1 when they are one), and is to be evaluated again
//  when both have ended: then, while any call it waited for is pending,
//  it waits again for the newest and the oldest of those left, and its
//  references are resolved again only once they have all ended
//  (SEMANTICS.md section 7). On UNRESOLVED err says which reference.
act_live_eval_t act_live_evaluate (act_live_t *self, act_err_t *err);

//  Evaluations of every call in this process so far (tests bound how
//  often a call is evaluated with it).
size_t act_live_evaluations (void);

//  The meta of its TASK (PROTOCOL.md section 2) as JSON text: in local
//  (room bytes) when it fits, else a new string the caller frees.
char *act_live_meta (act_live_t *self, char *local, size_t room);

//  STATUS of the call (PROTOCOL.md section 1), as a new object.
json_t *act_live_status (act_live_t *self);

#endif
